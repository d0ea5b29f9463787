"""The Jupyter front of the agent: the ``%%agent`` magic, the live widgets, the chat panel.

``magic.py`` (``%load_ext``), ``session.py`` (what a kernel's runs share),
``handle.py`` (the run handle and its driver task), ``runmodel.py`` (events -> what is
shown), ``runview.py`` / ``cards.py`` / ``approvals.py`` (the widgets), ``transcript.py``
(the static record left in the cell), ``chat.py`` (the chat panel), ``config.py``.
Importing this package imports none of them.
"""
