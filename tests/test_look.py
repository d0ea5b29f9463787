"""One look in light and dark: what the widgets, the transcripts and the lessons draw takes
its colours from JupyterLab's theme (``view/style.py``), shows no emoji (a box where no
emoji font is installed), draws a normal end as success, and shows no dollar cost for an
offline replay (it spends nothing). The contrast itself is measured in a page:
``tests/jupyter/test_contrast_browser.py``."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from jupyter_agent.lessons import render
from jupyter_agent.loop.events import OFFLINE_REPLAY, Notice
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.view.style import ERROR_LINE, SUCCESS_LINE, WARN_LINE
from jupyter_agent.view.transcript import format_usage, transcript_markdown

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_agent"
#: The modules that draw in a page or a terminal. (``lessons/timeline.py`` draws a picture,
#: an SVG image with its own white background: its colours are its own.)
DRAWING = [PACKAGE / p for p in (
    "jupyter/widgets/cards.py", "jupyter/widgets/runview.py", "jupyter/magic/chat.py", "jupyter/widgets/approvals.py",
    "jupyter/widgets/fallback.py", "jupyter/widgets/run_handle.py", "jupyter/widgets/undo_bar.py",
    "jupyter/panel/panel_comm.py", "jupyter/panel/panel_json.py", "jupyter/panel/panel_runs.py",
    "view/labels.py", "view/transcript.py",
    "view/review.py", "view/style.py", "lessons/render.py", "lessons/widget.py", "cli.py", "terminal_approvals.py")]
HEX = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b")
#: Emoji: the pictographs' planes, the emoji presentation selector, and the BMP signs that
#: browsers draw as emoji (which we used to draw).
EMOJI = re.compile("[\U0001F000-\U0001FAFF\uFE0F\u270B\u23F3\u231B\u26D4\u23F9\u23F8\u274C\u2705\u2139\u2757"
                   "\u2753\u2B50\u2714\u2611]")


def _strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module, docstrings aside (what it can draw)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    return [(t.start[0], t.string) for t in tokens
            if t.type in kinds and not t.string.lstrip("rRbBuUfF").startswith(('"""', "'''"))]


@pytest.mark.parametrize("path", DRAWING, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_drawn_colours_are_the_themes_and_icons_are_no_emoji(path):
    found = [(line, s) for line, s in _strings(path) if HEX.search(s)]
    assert not found, f"hard-coded colours (use view/style.py): {found}"
    emoji = [(line, s) for line, s in _strings(path) if EMOJI.search(s)]
    assert not emoji, f"emoji (use style.ICONS or labels' text signs): {emoji}"


def test_a_normal_end_is_success_in_the_stepper_and_the_others_are_not():
    completed = render.diagram_html(4, ended=True, end_reason="completed")
    end_cell = completed.split('data-step="end"')[0].rsplit("<td", 1)[1]
    assert SUCCESS_LINE in end_cell and ERROR_LINE not in end_cell
    assert WARN_LINE in render.diagram_html(4, ended=True, end_reason="max_turns").rsplit("<td", 1)[1]
    assert ERROR_LINE in render.diagram_html(4, ended=True, end_reason="model_error").rsplit("<td", 1)[1]


def test_no_cost_is_shown_for_an_offline_replay():
    live, replay = RunModel(model="claude-sonnet-4-5"), RunModel(model="claude-sonnet-4-5")
    replay.handle(Notice(OFFLINE_REPLAY, "Offline replay — your prompt is not used; this replays demo.json."))
    assert "$" in format_usage(live) and replay.offline
    assert "$" not in format_usage(replay) and "tokens in" in format_usage(replay)
    assert "$" not in transcript_markdown(replay)
