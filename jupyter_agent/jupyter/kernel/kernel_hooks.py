"""How a session hooks its kernel: a kernel interrupt stops the running run while the
kernel is idle, and a shutdown or restart leaves plain outputs behind (a widget whose
kernel is gone shows an error, not its transcript). ``%unload_ext`` undoes both."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...conversation import Conversation
    from ..bridge.kernel_types import Shell
    from ..persistence.resume import ConversationSaver
    from ..widgets.run_handle import AgentRun
    from .agent_config import AgentConfig

log = logging.getLogger(__name__)


class KernelHooks:
    """The kernel hooks of :class:`~.agent_session.AgentSession` (its base): what they
    read of the session is declared here and set by the session."""

    shell: Shell | None
    config: AgentConfig
    active: AgentRun | None
    saver: ConversationSaver | None
    shutdown_listeners: list[Callable[[str], None]]
    _conversation: Conversation | None
    _sigint_installed: bool
    _shutdown_installed: bool

    # -- kernel interrupt ---------------------------------------------------------------------
    def _install_interrupt_handler(self) -> None:
        """Make a kernel interrupt stop the run while the kernel is idle.

        ipykernel ignores SIGINT between requests and re-installs the handler it saved
        after each one (``saved_sigint_handler``); putting ours there makes it the idle
        handler. While a cell executes, ipykernel's own handler is in place, so an
        interrupt still interrupts that cell as usual.
        """
        kernel = getattr(self.shell, "kernel", None)
        if (self._sigint_installed or not self.config.stop_on_interrupt or kernel is None
                or threading.current_thread() is not threading.main_thread()
                or not hasattr(kernel, "saved_sigint_handler")):
            return
        previous = kernel.saved_sigint_handler
        loop = asyncio.get_event_loop()

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            active = self.active
            if active is not None and not active.done:
                loop.call_soon_threadsafe(active.stop)
            elif callable(previous):
                previous(signum, frame)

        on_sigint._jupyter_agent_previous = previous  # type: ignore[attr-defined]  # a mark on a function
        kernel.saved_sigint_handler = on_sigint
        self._sigint_installed = True

    # -- kernel shutdown / restart ---------------------------------------------------------
    def install_shutdown_hook(self) -> None:
        """Before the kernel shuts down or restarts, leave plain outputs behind.

        A widget whose kernel is gone shows "Error displaying widget: model not found" in
        JupyterLab, which then renders no other MIME type of that output (docs/design.md, "Output that survives"). So
        when a shutdown request arrives (JupyterLab's restart and shutdown send one), the
        running run is marked interrupted and its output replaced by its transcript, and
        every chat panel replaces its widget by its transcript, while iopub still carries
        messages to the page. ``atexit`` does the same for other clean exits.
        """
        kernel = getattr(self.shell, "kernel", None)
        if self._shutdown_installed or kernel is None or not hasattr(kernel, "do_shutdown"):
            return
        original = kernel.do_shutdown

        def do_shutdown(restart: bool, *args: Any, **kwargs: Any) -> Any:
            self.leave_plain_outputs("The kernel was restarted." if restart else "The kernel was shut down.")
            return original(restart, *args, **kwargs)

        do_shutdown._jupyter_agent_original = original  # type: ignore[attr-defined]  # a mark on a function
        kernel.do_shutdown = do_shutdown
        import atexit

        atexit.register(self.leave_plain_outputs, "The kernel exited.")
        self._shutdown_installed = True

    def leave_plain_outputs(self, why: str) -> None:
        """Replace every live widget output of this session by its static transcript."""
        if self._conversation is not None:  # no MCP server outlives its kernel
            self._conversation.mcp_servers.kill_now()
        active = self.active
        if active is not None and not active.done:
            try:
                active.lose(why)
            except Exception:  # the kernel is going down: do what can be done
                log.debug("could not leave the active run's output plain", exc_info=True)
        for listener in list(self.shutdown_listeners):
            try:
                listener(why)
            except Exception:
                log.debug("a shutdown listener failed: %r", listener, exc_info=True)
        if self.saver is not None:  # the last turn's save is written before the kernel goes
            self.saver.flush()
        try:
            sys.stdout.flush()
        except Exception:  # stdout already closed at interpreter exit
            log.debug("could not flush stdout", exc_info=True)

    def uninstall(self) -> None:
        """Undo :meth:`_install_interrupt_handler` (``%unload_ext``)."""
        kernel = getattr(self.shell, "kernel", None)
        handler = getattr(kernel, "saved_sigint_handler", None)
        previous = getattr(handler, "_jupyter_agent_previous", None)
        if kernel is not None and previous is not None:
            kernel.saved_sigint_handler = previous
            if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is handler:
                signal.signal(signal.SIGINT, previous)
        self._sigint_installed = False
        shutdown = getattr(kernel, "do_shutdown", None)
        original = getattr(shutdown, "_jupyter_agent_original", None)
        if kernel is not None and original is not None:
            kernel.do_shutdown = original
            import atexit

            atexit.unregister(self.leave_plain_outputs)
        self._shutdown_installed = False
