"""The Jupyter front of the agent: the ``%%agent`` magic, the live widgets, the chat panel.

``magic.py`` (``%load_ext``), ``session.py`` (what a kernel's runs share),
``handle.py`` (the run handle and its driver task), ``runview.py`` / ``cards.py`` /
``approvals.py`` (the widgets), ``chat.py`` (the chat panel), ``config.py``. What is shown
comes from ``jupyter_agent.view`` (the view model, the labels, the static transcript left
in the cell), which the command line shares. Importing this package imports none of them.
"""
