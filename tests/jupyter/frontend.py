"""A real kernel, with the test playing the frontend (DESIGN §4).

:class:`Frontend` starts an ipykernel through ``jupyter_client`` (ipc transport, temp
IPYTHONDIR/JUPYTER_* dirs), executes cells the way JupyterLab does (``cellId`` in the
request metadata) or the way nbclient does, and keeps every iopub message. It tracks
widget state from ``comm_open``/``comm_msg`` and clicks a button by sending
``comm_msg {method: "custom", content: {event: "click"}}`` to its comm id.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from jupyter_client.manager import AsyncKernelManager


def isolated_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a test kernel: its own IPython/Jupyter dirs, no real keys."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
    for name in ("ipython", "jupyter_config", "jupyter_data", "jupyter_runtime"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    env.update(IPYTHONDIR=str(tmp / "ipython"), JUPYTER_CONFIG_DIR=str(tmp / "jupyter_config"),
               JUPYTER_DATA_DIR=str(tmp / "jupyter_data"), JUPYTER_RUNTIME_DIR=str(tmp / "jupyter_runtime"),
               JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    env.update(extra)
    return env


class Frontend:
    """One kernel and what it sent on iopub."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self.km: AsyncKernelManager | None = None
        self.kc: Any = None
        self.messages: list[dict[str, Any]] = []
        self.widgets: dict[str, dict[str, Any]] = {}  # comm_id -> state
        self._reader: asyncio.Task | None = None

    async def start(self) -> "Frontend":
        self.km = AsyncKernelManager(transport="ipc", kernel_name="python3")
        # an absolute socket path (a relative one resolves differently in the kernel's cwd),
        # and a short one: unix socket paths are limited to ~107 bytes
        self._sockets = tempfile.mkdtemp(prefix="ja-")
        self.km.ip = os.path.join(self._sockets, "k")
        await self.km.start_kernel(env=self.env, cwd=str(self.cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        await self.kc.wait_for_ready(timeout=30)
        self._reader = asyncio.ensure_future(self._read())
        return self

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            await self.km.shutdown_kernel(now=True)
            shutil.rmtree(self._sockets, ignore_errors=True)

    async def _read(self) -> None:
        while True:
            msg = await self.kc.get_iopub_msg()
            self.messages.append(msg)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
                self.widgets[content["comm_id"]] = dict(content["data"]["state"])
            elif kind == "comm_msg" and content["comm_id"] in self.widgets:
                data = content["data"]
                if data.get("method") == "update":
                    self.widgets[content["comm_id"]].update(data["state"])
            elif kind == "comm_close":
                self.widgets.pop(content["comm_id"], None)

    # -- cells --------------------------------------------------------------------------
    async def execute(self, code: str, *, lab: bool = True, timeout: float = 30,
                      allow_stdin: bool | None = None, cell_id: str | None = None) -> dict[str, Any]:
        """Run a cell; returns ``{"reply", "outputs", "msg_id", "seconds"}`` once it is idle.

        ``lab=True`` sends what JupyterLab sends (a ``cellId``: ``cell_id``, else a new
        one); ``lab=False`` what nbclient sends (no ``cellId``, ``allow_stdin`` false).
        """
        metadata = {"cellId": cell_id or str(uuid.uuid4())} if lab else {}
        msg = self.kc.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": (lab if allow_stdin is None else allow_stdin), "stop_on_error": True,
        }, metadata=metadata)
        started = time.monotonic()
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        reply = await self._reply(msg_id, timeout)
        await self.until(lambda: any(m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                                     and m["content"]["execution_state"] == "idle" for m in self.messages),
                         timeout, "the cell to go idle")
        return {"reply": reply, "outputs": self.outputs(msg_id), "msg_id": msg_id,
                "seconds": time.monotonic() - started}

    async def _reply(self, msg_id: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no execute_reply")
            msg = await asyncio.wait_for(self.kc.get_shell_msg(), remaining)
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]

    def outputs(self, msg_id: str) -> list[dict[str, Any]]:
        kinds = ("stream", "display_data", "execute_result", "error", "update_display_data")
        return [dict(m["content"], msg_type=m["msg_type"]) for m in self.messages
                if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] in kinds]

    async def value(self, expr: str) -> str:
        """The repr of an expression evaluated in the kernel."""
        result = await self.execute(expr)
        for out in result["outputs"]:
            if out["msg_type"] == "execute_result":
                return out["data"]["text/plain"]
            if out["msg_type"] == "error":
                raise AssertionError("\n".join(out["traceback"]))
        raise AssertionError(f"no value for {expr!r}: {result['outputs']}")

    # -- widgets ------------------------------------------------------------------------
    def buttons(self, description: str) -> list[str]:
        return [cid for cid, s in self.widgets.items()
                if s.get("_model_name") == "ButtonModel" and s.get("description") == description
                and not s.get("disabled")]

    def of_model(self, name: str) -> list[str]:
        return [cid for cid, s in self.widgets.items() if s.get("_model_name") == name]

    def comm_msg(self, comm_id: str, data: dict[str, Any]) -> None:
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def click(self, comm_id: str) -> None:
        self.comm_msg(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: Any) -> None:
        """What a frontend sends when the user types into a text widget."""
        self.comm_msg(comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})
        self.widgets[comm_id]["value"] = value

    async def until(self, predicate: Callable[[], Any], timeout: float = 10, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for {what}")
            await asyncio.sleep(0.01)

    async def button(self, description: str, timeout: float = 10) -> str:
        """Wait for an enabled button with this description; its comm id (the newest)."""
        found = await self.until(lambda: self.buttons(description), timeout, f"a {description!r} button")
        return found[-1]

    def display_updates(self, display_id: str) -> list[dict[str, Any]]:
        return [m["content"] for m in self.messages if m["msg_type"] == "update_display_data"
                and m["content"].get("transient", {}).get("display_id") == display_id]

    def widget_text(self) -> str:
        """Everything the widgets show, as one string (HTML values and Markdown outputs)."""
        parts = []
        for state in self.widgets.values():
            if isinstance(state.get("value"), str):
                parts.append(state["value"])
            for out in state.get("outputs") or []:
                parts.append(str(out.get("data", {}).get("text/markdown", "")))
        return "\n".join(parts)
