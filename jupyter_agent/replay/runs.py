"""One replayed run: where it works, how its recorded calls are filled in, and how it
answers when what happens here leaves the recording.

Every run of the loop replays the transcript from its start (a user message that answers
no tool call begins a run), so a second run, a run after a Stop, a Deny or an error
replays as the first did. A transcript with ``"scratch": true`` gets a new temporary
folder per run, its ``files`` written there: nothing the user does (or did in an earlier
run) in their own folder can make a recorded call fail.

Placeholders in a recorded response (any string of its blocks) are filled per run:

``{{scratch}}``
    the run's scratch folder (absolute path);
``{{notebook}}``
    the notebook the request says the user works in;
``{{agent_cell}}``
    the id of the ``%%agent`` cell the request comes from (what JupyterLab sends);
``{{inserted_cell}}``
    the id of the cell the run's latest ``NotebookEdit`` insert created (from its result);
``{{error_cell}}``
    the id of the cell whose error a Fix with agent / Explain click is about.

The notebook and the cell come from the request's context, as a model reads them
(:func:`jupyter_agent.prompts.notebook_in_context`): a replay knows only what a live
model would know. Tool-use ids get a per-run suffix from the second run on, so one
conversation never holds the same id twice.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping, Sequence

from ..loop.permission_result import DENIED, NO_ONE_APPROVES
from ..model.transcript import write_expected_files
from ..prompts import error_help_in_request, notebook_in_context

log = logging.getLogger(__name__)

__all__ = ["ReplayRun", "PLACEHOLDERS", "starts_run", "denied_by_user", "denied_unattended", "closing_answer",
           "run_prompt"]

PLACEHOLDERS = ("scratch", "notebook", "agent_cell", "inserted_cell", "error_cell")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
#: what NotebookEdit answers for an insert (tools/notebook_edit.py): the new cell's id
_INSERTED = re.compile(r"^Inserted cell (\S+) \(")
#: how a Deny by a person starts, with or without a note (loop/permission_result.py)
_DENIED_START = DENIED.split(" STOP")[0]


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def starts_run(messages: Sequence[Mapping[str, Any]]) -> bool:
    """A request whose last message is the user's and says something of its own (a block
    that is not a tool result): a new run. Within a run the loop's user messages are tool
    results only; a prompt sent after a run that ended with calls unanswered by a person (a
    Stop, an error) is merged by the API's rules into the message of their results, and
    still starts a run."""
    if not messages:
        return True
    last = messages[-1]
    return last.get("role") == "user" and (
        isinstance(last.get("content"), str) or any(b.get("type") != "tool_result" for b in _blocks(last)))


def run_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the user message that starts a run (the last message of its first request)."""
    return " ".join(str(b.get("text", "")) for b in _blocks(messages[-1]) if b.get("type") == "text") \
        if messages else ""


def denied_by_user(block: Mapping[str, Any]) -> bool:
    """A tool_result that says a person denied the call."""
    return bool(block.get("is_error")) and _result_text(block).startswith(_DENIED_START)


def denied_unattended(block: Mapping[str, Any]) -> bool:
    """A tool_result that says the call asked and no one could answer (a headless run:
    ``jupyter agent run`` without a terminal, a notebook executed by nbclient)."""
    return bool(block.get("is_error")) and NO_ONE_APPROVES in _result_text(block)


def closing_answer(tool: str, *, unattended: bool = False) -> str:
    """The replay's last answer after a Deny: a recording cannot take a new instruction.
    ``unattended``: no person denied it; the call asked and no one could answer."""
    if unattended:
        return (f"(Offline replay) {tool} needs a person's approval and no one can give it in this run, so "
                "this recorded run ends here; nothing else was changed. Run it where you can approve its "
                "calls (the %%agent cell in JupyterLab, or jupyter agent run in a terminal) to see it all, "
                "or set ANTHROPIC_API_KEY to work with Claude.")
    return (f"(Offline replay) You denied {tool}, so this recorded run ends here: it cannot follow a "
            "new instruction, and nothing else was changed. Your answer is kept in the conversation. "
            "Run it again (the %%agent cell, or the command) to replay it from the start, or set "
            "ANTHROPIC_API_KEY to work with Claude.")


@dataclass
class ReplayRun:
    """The state of one replayed run: its number, scratch folder and filled-in values."""

    number: int
    files: dict[str, str]
    scratch: Path | None = None
    values: dict[str, str] = field(default_factory=dict)
    #: the id each call got here -> the id it has in the recording
    recorded_ids: dict[str, str] = field(default_factory=dict)

    @classmethod
    def begin(cls, number: int, transcript: dict[str, Any], messages: Sequence[Mapping[str, Any]]) -> ReplayRun:
        """A new run: a scratch folder with the transcript's files (if it asks for one),
        and the notebook and ``%%agent`` cell the request names."""
        run = cls(number, dict(transcript.get("files") or {}))
        if transcript.get("scratch"):
            run.scratch = Path(tempfile.mkdtemp(prefix="jupyter-agent-replay-")).resolve()
            write_expected_files(run.files, run.scratch)
            run.values["scratch"] = str(run.scratch)
        said = " ".join(str(b.get("text", "")) for m in messages[:1] for b in _blocks(m) if b.get("type") == "text")
        notebook, cell = notebook_in_context(said)
        if notebook:
            run.values["notebook"] = notebook
        if cell:
            run.values["agent_cell"] = cell
        help_request = error_help_in_request(run_prompt(messages))
        if help_request is not None:
            run.values["error_cell"] = help_request.cell_id
        return run

    def remove_scratch(self) -> None:
        """Delete the scratch folder (the next run, or the end of the replay)."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            log.debug("removed the replay's scratch folder %s", self.scratch)

    def learn(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Take ``{{inserted_cell}}`` from the latest NotebookEdit insert's result."""
        for block in _blocks(messages[-1] if messages else {}):
            if block.get("type") == "tool_result" and not block.get("is_error"):
                found = _INSERTED.match(_result_text(block))
                if found:
                    self.values["inserted_cell"] = found.group(1)

    def unfillable(self, responses: list[dict[str, Any]]) -> list[str]:
        """The placeholders of a whole recording that this run can never fill: those the
        request must give (the notebook, the cells), not those a call's result gives later."""
        used = {m.group(1) for r in responses for m in _PLACEHOLDER.finditer(repr(r.get("content")))}
        return sorted(used - {"inserted_cell", "scratch"} - set(self.values))

    def missing(self, content: list[dict[str, Any]]) -> list[str]:
        """The placeholders ``content`` uses that this run cannot fill."""
        used = {m.group(1) for m in _PLACEHOLDER.finditer(repr(content))}
        return sorted(name for name in used if name not in self.values)

    def fill(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The recorded blocks with this run's values and tool-use ids."""
        filled = [self._fill(block) for block in content]
        for block, recorded in zip(filled, content):
            if block.get("type") == "tool_use" and self.number > 1:
                block["id"] = f"{recorded['id']}_{self.number}"
            if block.get("type") == "tool_use":
                self.recorded_ids[str(block["id"])] = str(recorded["id"])
        return filled

    def _fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: self.values.get(m.group(1), m.group(0)), value)
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        return value
