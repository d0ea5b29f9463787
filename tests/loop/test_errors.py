"""One root for the package's exceptions, with the Busy and Refused families; the old names
still import, as the same classes (a busy Conversation raises Busy: tests/loop/test_turns.py)."""

from __future__ import annotations

import pytest

import jupyter_agent
from jupyter_agent import Busy, JupyterAgentError, ModelError, Refused
from jupyter_agent.conversation import ConversationBusy
from jupyter_agent.errors import Busy as ErrorsBusy
from jupyter_agent.jupyter.outside.outside_hub import Refused as OutsideRefused
from jupyter_agent.jupyter.persistence.resume import ResumeRefused
from jupyter_agent.jupyter.kernel.agent_session import AgentBusy
from jupyter_agent.jupyter.widgets.undo_bar import UndoRefused, pick_run
from jupyter_agent.loop.model_protocol import PromptTooLongError
from jupyter_agent.loop.tool import ToolError
from jupyter_agent.notebook.document import StaleNotebookError


def test_the_old_names_are_the_families():
    assert ConversationBusy is AgentBusy is Busy is ErrorsBusy is jupyter_agent.Busy
    assert UndoRefused is ResumeRefused is OutsideRefused is Refused
    for family in (Busy, Refused):
        assert issubclass(family, JupyterAgentError) and issubclass(family, RuntimeError)  # as they were
    for error in (ModelError, PromptTooLongError, ToolError, StaleNotebookError):
        assert issubclass(error, JupyterAgentError)
    assert not issubclass(Busy, Refused) and not issubclass(Refused, Busy)


def test_an_undo_of_no_run_is_refused_and_caught_by_the_root():
    class Session:  # what pick_run reads of the kernel's session: its runs
        runs: list[object] = []

    with pytest.raises(JupyterAgentError, match="No runs yet") as caught:
        pick_run(Session(), None)
    assert isinstance(caught.value, Refused)



#: Exceptions that stay inside the module that raises them (control flow, never raised to a
#: caller of the package), by module and class. Every other exception class derives from the root.
INTERNAL = {
    ("loop/stream.py", "Aborted"), ("replay/respond.py", "ServerClosing"), ("replay/relay_folder.py", "AnswerError"),
    ("tools/shell_reaper.py", "_Told"), ("tools/shell_effects.py", "_Refused"), ("tools/shell_words.py", "Unreadable"),
    ("jupyter/outside/outside_read.py", "NoSuchOutput"), ("jupyter/magic/agent_magic.py", "_ShownHelp"),
    ("jupyter/outside/outside_create.py", "CannotCreate"), ("tools/nbsearch.py", "RawNotebook"),
}


def test_every_exception_the_package_raises_to_callers_derives_from_the_root():
    """A class whose base is one of Python's own exceptions (not one of ours) starts a new tree:
    only the root may, and the internal ones listed above."""
    import ast
    import builtins
    import pathlib
    package = pathlib.Path(jupyter_agent.__file__).parent
    builtin_errors = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
    roots = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                if bases and all(b in builtin_errors for b in bases):
                    roots.add((path.relative_to(package).as_posix(), node.name))
    assert roots - INTERNAL == {("errors.py", "JupyterAgentError")}
    assert INTERNAL <= roots  # a listed one that is gone: delete its line
