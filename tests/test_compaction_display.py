"""A compaction and the context meter as every front shows them: a real run (real SDK,
fake API) compacts, and the terminal, the transcript and the card draw the same event
from the run's view model; the summary is model text, shown as data."""

from __future__ import annotations

import io

from markdown_it import MarkdownIt

from jupyter_agent import query
from jupyter_agent.cli import TerminalDisplay
from jupyter_agent.loop.events import Compaction, CompactionKind, CompactionOutcome, CompactionTrigger
from jupyter_agent.loop.tool import ToolCheckPolicy
from jupyter_agent.testing import FakeMessagesAPI, prompt_too_long, response, text, tool_use
from jupyter_agent.view.labels import compaction_text
from jupyter_agent.view.transcript import transcript_markdown

HOSTILE = "Summary <img src=x onerror=window.pwned=1> **bold** [x](javascript:alert(1))"


async def run_with_compaction(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\n")
    script = [response(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")})), prompt_too_long(),
              response(text(HOSTILE)), response(text("Done."))]
    out, err = io.StringIO(), io.StringIO()
    display = TerminalDisplay(out, err, cwd=tmp_path)
    with FakeMessagesAPI(script) as api:
        run = query("Look at notes.txt, please.", model=api.model(), cwd=tmp_path, permissions=ToolCheckPolicy())
        async for event in run:
            display.handle(event)
        await run.params.model.aclose()
    return display, err.getvalue()


async def test_the_terminal_and_the_transcript_show_the_compaction_and_the_meter(tmp_path):
    display, err = await run_with_compaction(tmp_path)
    assert "⇊ Compacted: " in err and "kept your 1 message, 1 file re-read" in err
    assert "· context " in err and "/ 200k" in err  # the meter on each request line
    md = transcript_markdown(display.model)
    assert "Compacted: " in md and "The summary that replaced the history" in md
    rendered = MarkdownIt("commonmark", {"html": True}).render(md)
    assert "<img" not in rendered and 'href="javascript' not in rendered
    assert "onerror=window.pwned=1" in rendered  # shown, as text


async def test_the_card_shows_the_compaction_with_its_summary_escaped(tmp_path):
    from jupyter_agent.jupyter.widgets import cards

    display, _ = await run_with_compaction(tmp_path)
    item = next(i for i in display.model.items if i.kind == "compaction")
    html = cards.compaction_html(item)
    assert "<details>" in html and "&lt;img src=x" in html and "<img" not in html
    assert "context " in cards.header_html(display.model)


def test_the_words_come_from_the_enums():
    def event(**kw):
        base = dict(kind=CompactionKind.SUMMARY, trigger=CompactionTrigger.AUTO,
                    outcome=CompactionOutcome.COMPACTED, tokens_before=182_000, tokens_after=31_000, window=200_000)
        return Compaction(**{**base, **kw})

    assert compaction_text(event(user_messages_kept=6, files_reread=("a", "b", "c", "d"))) == \
        "Compacted: 182k → 31k tokens, kept your 6 messages, 4 files re-read"
    assert compaction_text(event(kind=CompactionKind.MICROCOMPACT, results_cleared=1, tokens_before=40_000,
                                 tokens_after=22_000)) == "Cleared 1 old tool result: 40k → 22k tokens"
    assert compaction_text(event(outcome=CompactionOutcome.VETOED, detail="not now")).endswith("not now")
