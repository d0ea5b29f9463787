"""Replay: a recorded transcript played back through the real SDK, offline.

``model.py`` (:class:`~.model.ReplayModel`) serves the transcript's responses from a
private fake Messages API (``server.py`` with ``respond.py``, ``script.py``, ``sse.py``,
``validation.py``, ``records.py``, ``cloud.py``: real HTTP and SSE, requests checked as the
real API checks them) to an ``AnthropicModel`` with a dummy key. ``packaged.py`` finds the
transcripts shipped in ``transcripts/``. The format and the recorder are :mod:`jupyter_agent.model.transcript`.
The tests' fake API (:mod:`jupyter_agent.testing`) is this same server.

Importing this package imports nothing else (``anthropic`` loads with ``model.py``).
"""
