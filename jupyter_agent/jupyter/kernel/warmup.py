"""Warm-up: load what the first ``%%agent`` run needs in the background, after ``%load_ext``.

``import anthropic`` alone takes 1.6–2.4 s on these machines (its ``types`` package);
with ipywidgets, pydantic, nbformat, the loop and the tools, a fresh kernel's first run
waited ~3.9 s before its first request left. ``%load_ext`` stays fast (it imports none
of them) and starts :func:`start`: a daemon thread that imports them while the person
types the prompt. The kernel never waits for it: the thread holds only the import
system's per-module locks, one module at a time (user code importing that very module at
that moment waits for it, as it would have to import it anyway), and it shares the GIL.

A run that starts before the warm-up ended calls :func:`wait` first, from the kernel's
thread: it joins the warm-up instead of importing the same modules beside it (two
threads importing one package at once can hit Python's import-deadlock detection when
the package has import cycles), then finds everything loaded. A failed warm-up import is
ignored here: the run imports the module itself and reports the error where it happens.

``JUPYTER_AGENT_WARMUP=0`` in the kernel's environment turns the warm-up off (the first
run then imports everything itself, as before).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from typing import TypedDict

__all__ = ["MODULES", "WARMUP_ENV", "start", "wait", "state"]

log = logging.getLogger(__name__)

WARMUP_ENV = "JUPYTER_AGENT_WARMUP"

#: Imported in this order: the SDK (most of the time), then the widgets, then ours, whose
#: own imports of the first two are then free. The SDK is only named here, to be loaded:
#: model/ stays the only code that uses it. Modules it loads lazily on the first request
#: are listed too (found with ``python -X importtime`` and ``sys.modules`` after a run).
MODULES = (
    "anthropic",
    "anthropic.lib.streaming",
    "httpx2",
    # what the SDK's transport imports only on the first request
    "httpcore2", "h11", "anyio._backends._asyncio", "truststore", "opentelemetry.propagate",
    "ipywidgets",
    "jupyter_agent.model.anthropic_model",
    "jupyter_agent.conversation",
    "jupyter_agent.permissions",
    "jupyter_agent.prompts",
    "jupyter_agent.tools.read", "jupyter_agent.tools.write", "jupyter_agent.tools.edit",
    "jupyter_agent.tools.glob", "jupyter_agent.tools.grep",
    "jupyter_agent.tools.notebook_edit", "jupyter_agent.tools.notebook_run", "jupyter_agent.tools.bash",
    # Bash's shell parser (a compiled grammar: a few milliseconds)
    "tree_sitter", "tree_sitter_bash",
    "jupyter_agent.jupyter.widgets.run_handle", "jupyter_agent.view.runmodel",
    "jupyter_agent.jupyter.widgets.runview", "jupyter_agent.jupyter.widgets.approvals",
)

class Progress(TypedDict):
    """When the warm-up started and ended (``time.monotonic()``), the CPU time its thread
    used (seconds), and what failed (what -> the error)."""

    started_at: float | None
    ended_at: float | None
    cpu_s: float | None
    failed: dict[str, str]


class WarmupState(Progress):
    """:func:`state`: the progress, and the warm-up thread's name and whether it runs."""

    thread: str | None
    running: bool


_lock = threading.Lock()
_thread: threading.Thread | None = None
_state: Progress = {"started_at": None, "ended_at": None, "cpu_s": None, "failed": {}}


def _warm() -> None:
    cpu_at_start = time.thread_time()
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # the run will import it again and show the real error
            log.debug("warm-up: importing %s failed", name, exc_info=True)
            _state["failed"][name] = f"{type(exc).__name__}: {exc}"
    try:
        # Each run sends the tools' JSON schemas; pydantic's first schema generation costs
        # ~20 ms more than the next ones (measured). Pure computation, no kernel state.
        from ...tools import default_tools

        for tool in default_tools():
            tool.to_api()
    except Exception as exc:  # the run builds them again and shows the real error
        log.debug("warm-up: building the tool schemas failed", exc_info=True)
        _state["failed"]["tool schemas"] = f"{type(exc).__name__}: {exc}"
    try:
        # The API client's TLS context loads the CA bundle (18-60 ms, measured): most of what
        # a first run still waited for after the imports. Built once per process (model/tls.py).
        from ...model.tls import shared_tls_context

        shared_tls_context()
    except Exception as exc:  # the run builds it again and shows the real error
        log.debug("warm-up: building the TLS context failed", exc_info=True)
        _state["failed"]["TLS context"] = f"{type(exc).__name__}: {exc}"
    _state["cpu_s"] = time.thread_time() - cpu_at_start
    _state["ended_at"] = time.monotonic()


def start() -> threading.Thread | None:
    """Start the warm-up thread (once per process; later calls return the same thread).
    None when ``JUPYTER_AGENT_WARMUP=0`` turned it off."""
    global _thread
    with _lock:
        if _thread is None and os.environ.get(WARMUP_ENV, "1").strip().lower() not in ("0", "false", "no", "off"):
            _state["started_at"] = time.monotonic()
            _thread = threading.Thread(target=_warm, name="jupyter-agent-warmup", daemon=True)
            _thread.start()
        return _thread


def wait(timeout: float = 60.0) -> bool:
    """Wait for a warm-up in progress (no-op when none was started, or it ended, or this is
    the warm-up thread itself). Returns whether no warm-up is running now; after
    ``timeout`` the caller goes on and imports what it needs itself."""
    thread = _thread
    if thread is None or thread is threading.current_thread():
        return True
    thread.join(timeout)
    return not thread.is_alive()


def state() -> WarmupState:
    """When the warm-up started and ended (``time.monotonic()``), the CPU time its thread
    used (``cpu_s``, seconds), and imports that failed."""
    thread = _thread
    return {**_state, "failed": dict(_state["failed"]),
            "thread": thread.name if thread is not None else None,
            "running": thread is not None and thread.is_alive()}
