"""The agent loop of the seed article, in Python. Imports nothing from IPython,
ipywidgets, comm or anthropic: anything with the :class:`Model` shape drives it."""
