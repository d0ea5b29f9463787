"""``TodoWrite {todos}``: the model's plan as a checklist (Claude Code's tool and schema).

Each call replaces the whole list (``content``, ``status`` pending | in_progress |
completed, ``activeForm``: what is being done, as the in-progress line says it). The list
is the conversation's (:class:`TodoList` in ``context.services``): it changes nothing
outside the run, so it never asks, in any mode (plan mode too). The result repeats the
list, so the model sees it as it stands, and :meth:`TodoWrite.carry_over` puts it back
into a compacted history. The fronts draw it as a checklist (``view/runmodel.PlanItem``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from ..loop.tool import PreparedCall, Tool, ToolContext, ToolInput, ToolOutput
from ..loop.wire import JSONObject

log = logging.getLogger(__name__)

#: At most this many tasks in one list, and this many characters in one task's text.
MAX_TODOS = 100
MAX_TODO_CHARS = 1_000
TODO_STATUSES = ("pending", "in_progress", "completed")
#: How the list reads to the model (a text sign for each status).
_SIGNS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
RESULT_LEAD = ("Todos have been modified successfully. Ensure that you continue to use the todo list to "
               "track your progress. Please proceed with the current tasks if applicable.")


class TodoEntry(ToolInput):
    content: str = Field(min_length=1, description="The task, in the imperative: \"Run the tests\"")
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str = Field(min_length=1, description="The task as it is being done: \"Running the tests\"")


class TodoWriteInput(ToolInput):
    todos: list[TodoEntry] = Field(description="The updated todo list")


#: Claude Code's schema, as its CLI sends it (the items inline, no ``$ref``).
_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"todos": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"content": {"type": "string", "minLength": 1},
                           "status": {"type": "string", "enum": list(TODO_STATUSES)},
                           "activeForm": {"type": "string", "minLength": 1}},
            "required": ["content", "status", "activeForm"],
            "additionalProperties": False,
        },
        "description": "The updated todo list",
    }},
    "required": ["todos"],
    "additionalProperties": False,
}


@dataclass
class TodoList:
    """The conversation's current plan (what the latest successful ``TodoWrite`` set)."""

    todos: list[dict[str, str]] = field(default_factory=list)


def checklist_text(todos: list[dict[str, str]]) -> str:
    """The list as the model reads it: one numbered line per task, ``[x]``/``[>]``/``[ ]``."""
    if not todos:
        return "(The todo list is empty.)"
    return "\n".join(f"{n}. {_SIGNS.get(t['status'], '[ ]')} {t['content']}"
                     + (" (in progress)" if t["status"] == "in_progress" else "")
                     for n, t in enumerate(todos, 1))


class TodoWrite(Tool[TodoWriteInput]):
    name = "TodoWrite"
    Input = TodoWriteInput
    max_result_size_chars = 200_000  # the list is bounded by its own limits: never saved to a file
    description = (
        "Use this tool to create and manage a structured task list for the current work. It helps you "
        "track progress, organise a task of several steps, and shows the user what you are doing and "
        "what is left.\n\n"
        "Use it when a task needs three or more distinct steps, when the user gives several tasks, and "
        "when new requirements appear. Skip it for a single, simple step.\n\n"
        "Each call replaces the whole list. Each task has `content` (imperative: \"Run the tests\"), "
        "`activeForm` (as it is being done: \"Running the tests\") and `status`: pending, in_progress or "
        "completed. Keep exactly one task in_progress while you work; mark a task completed as soon as "
        "it is done (not in batches), and only when it is fully done. It changes nothing outside this "
        "conversation and never asks the user."
    )

    def input_schema(self) -> JSONObject:
        return _SCHEMA

    def is_read_only(self, input: TodoWriteInput) -> bool:
        return True  # it changes only the conversation's own plan: never asks

    async def validate_input(self, input: TodoWriteInput, context: ToolContext) -> str | None:
        if len(input.todos) > MAX_TODOS:
            return (f"The todo list has {len(input.todos)} tasks; at most {MAX_TODOS} are kept. "
                    "Group small steps into larger tasks.")
        for n, todo in enumerate(input.todos):
            for name, text in (("content", todo.content), ("activeForm", todo.activeForm)):
                if not text.strip():
                    return f"todos[{n}].{name} is blank; say what the task is."
                if len(text) > MAX_TODO_CHARS:
                    return (f"todos[{n}].{name} is {len(text):,} characters; at most {MAX_TODO_CHARS:,}. "
                            "Keep each task to a line.")
        return None

    async def call(self, input: TodoWriteInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        plan = context.services.get(TodoList)
        plan.todos = [todo.model_dump() for todo in input.todos]
        return ToolOutput(f"{RESULT_LEAD}\n\nThe todo list now:\n{checklist_text(plan.todos)}")

    def carry_over(self, context: ToolContext) -> str | None:
        plan = context.services.get(TodoList)
        if not plan.todos:
            return None
        return f"The todo list (TodoWrite) as it stands:\n{checklist_text(plan.todos)}"


__all__ = ["TodoList", "TodoWrite", "TodoWriteInput", "checklist_text"]
