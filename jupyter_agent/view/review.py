"""A run's changes and their undo, in words, for every display (transcript, terminal).

The records are :mod:`jupyter_agent.changes`' data; this module says what each change
and each undo outcome means, the same way everywhere. The words are ours; the paths,
cell ids, names and diffs came from the model or the disk, so they reach a screen only
through ``render/`` (Markdown here; the terminal and the widgets at their own end).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..changes import Change, ChangeKind, RunChanges, UndoOutcome, UndoReport, UndoStep
from ..render.html import inline_html
from ..render.markdown import markdown_fence, markdown_literal
from .items import relative

#: What a run did, per kind of change.
CHANGE_WORDS = {
    ChangeKind.FILE_CREATED: "created",
    ChangeKind.FILE_CHANGED: "changed",
    ChangeKind.CELL_INSERTED: "inserted cell",
    ChangeKind.CELL_REPLACED: "replaced cell",
    ChangeKind.CELL_DELETED: "deleted cell",
    ChangeKind.CELL_MOVED: "moved cell",
}
#: What the undo did, per outcome.
OUTCOME_WORDS = {
    UndoOutcome.RESTORED: "put back as it was",
    UndoOutcome.REMOVED: "removed (the run had created it)",
    UndoOutcome.LEFT_CHANGED: "changed since the run; left as it is",
    UndoOutcome.ALREADY: "already as it was before the run",
    UndoOutcome.TOO_LARGE: "too large to have been kept; left as it is",
    UndoOutcome.FAILED: "could not be put back; left as it is",
    UndoOutcome.REFUSED: "refused; left as it is",
}
OUTCOME_ICONS = {UndoOutcome.RESTORED: "↩", UndoOutcome.REMOVED: "↩", UndoOutcome.ALREADY: "·",
                 UndoOutcome.LEFT_CHANGED: "⚠", UndoOutcome.TOO_LARGE: "⚠", UndoOutcome.FAILED: "✗",
                 UndoOutcome.REFUSED: "✗"}
#: Why undoing cells leaves the kernel as it is, and what to do about it.
KERNEL_KEPT = ("undoing cells does not undo what they did in the kernel: re-run the cells you need, "
               "or restart the kernel, to drop these")
#: Longest diff a review shows per change (characters; the middle is cut).
MAX_DIFF_CHARS = 6000


def variables_line(names: list[str] | tuple[str, ...]) -> str:
    """``variables changed: a, b`` ("" when no cell changed a name)."""
    return f"variables changed: {', '.join(names)}" if names else ""


def where(path: str, cell_id: str, cwd: Path | str | None) -> str:
    """A file as the user knows it (relative to the working folder), with its cell."""
    shown = relative(path, cwd)
    return f"{shown} (cell {cell_id})" if cell_id else shown


def change_line(change: Change, cwd: Path | str | None) -> str:
    """One change in words: "changed notes.txt", "inserted cell analysis.ipynb (cell ab12)"."""
    return f"{CHANGE_WORDS[change.kind]} {where(change.path, change.cell_id, cwd)}"


def step_line(step: UndoStep, cwd: Path | str | None) -> str:
    """One undo step in words: "notes.txt: changed since the run; left as it is"."""
    line = f"{where(step.path, step.cell_id, cwd)}: {OUTCOME_WORDS[step.outcome]}"
    return f"{line} ({step.error})" if step.error else line


def change_diff(change: Change, cwd: Path | str | None) -> str:
    """The change as a unified diff ("" when its text was not kept)."""
    if change.before is None or change.after is None:
        return ""
    label = where(change.path, change.cell_id, cwd)
    lines = difflib.unified_diff(change.before.splitlines(keepends=True), change.after.splitlines(keepends=True),
                                 fromfile=f"a/{label}", tofile=f"b/{label}")
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > MAX_DIFF_CHARS:
        half = MAX_DIFF_CHARS // 2
        text = f"{text[:half]}\n… ({len(text) - MAX_DIFF_CHARS:,} characters of the diff left out) …\n{text[-half:]}"
    return text


def undo_lines(report: UndoReport, cwd: Path | str | None) -> list[str]:
    """The undo in plain lines (a terminal, ``text/plain``), the kernel's names last."""
    if not report.steps:
        lines = ["Nothing to undo: the run changed no file or cell."]
    else:
        lines = [f"{OUTCOME_ICONS[s.outcome]} {step_line(s, cwd)}" for s in report.steps]
        left = report.left
        if left:
            many = len(left) != 1
            lines.append(f"{len(left)} change{'s' if many else ''} left as {'they are' if many else 'it is'}: "
                         "the diff is in the run's list of changes.")
        if report.failed:
            lines.append("Fix what stopped it, then undo the run again: what was put back stays as it is.")
    if report.variables:
        lines.append(f"{variables_line(report.variables)} ({KERNEL_KEPT})")
    return lines


def changes_markdown(changes: RunChanges, cwd: Path | str | None) -> str:
    """The review at the end of a run: each change with its own diff, folded, and the
    kernel's names ("" when the run changed nothing)."""
    parts = []
    listed = changes.changes()
    if listed:
        parts.append(f"**Changes** ({len(listed)}; undo them with `%agent undo`):")
        for change in listed:
            diff = change_diff(change, cwd)
            summary = f"<summary>{inline_html(change_line(change, cwd))}</summary>"
            body = markdown_fence(diff, "diff") if diff else "*(too large to keep: no diff)*"
            parts.append(f"<details>{summary}\n\n{body}\n\n</details>")
    if changes.variables:
        parts.append(markdown_literal(variables_line(changes.variables)))
    return "\n\n".join(parts)


def changes_lines(changes: RunChanges, cwd: Path | str | None) -> list[str]:
    """The run's list of changes in plain lines (the CLI), the kernel's names last."""
    lines = [change_line(c, cwd) for c in changes.changes()]
    if changes.variables:
        lines.append(variables_line(changes.variables))
    return lines


__all__ = ["CHANGE_WORDS", "KERNEL_KEPT", "OUTCOME_WORDS", "change_diff", "change_line", "changes_lines",
           "changes_markdown", "step_line", "undo_bundle", "undo_lines", "undo_markdown", "variables_line"]


def undo_markdown(report: UndoReport, cwd: Path | str | None, title: str = "Undone") -> str:
    """The undo as Markdown: a title and a line per change."""
    listed = "\n".join(f"- {markdown_literal(line)}" for line in undo_lines(report, cwd))
    return f"**↩ {markdown_literal(title)}**\n\n{listed}"


def undo_bundle(report: UndoReport, cwd: Path | str | None, title: str = "Undo") -> dict[str, str]:
    """The undo as a display bundle (Markdown, and plain text for consoles)."""
    return {"text/markdown": undo_markdown(report, cwd, title),
            "text/plain": "\n".join([title, *undo_lines(report, cwd)])}
