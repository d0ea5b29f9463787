"""What a run looks like, for every front: plain data and text, no widget stack.

``runmodel.py`` (:class:`RunModel`: the loop's events folded into items, the view model
every display listens to), ``labels.py`` (the words and signs: a tool call's state, what
an end reason means), ``transcript.py`` (the static Markdown record of a run). The Jupyter
front (``jupyter/``: widgets, the cell's transcript, the chat panel) and the command line
(``cli.py``: the terminal display) are both drawn from these, so they cannot disagree.
Nothing here imports IPython, ipywidgets or comm (``tests/test_package_graph.py``).
"""
