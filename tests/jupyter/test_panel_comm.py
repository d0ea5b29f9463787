"""The side panel's kernel side, in a real kernel, the test playing the panel: it opens
the ``jupyter_agent.panel`` comm, drives the kernel's one conversation, and gets the
runs as plain data, one message per frame."""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio

from jupyter_agent.jupyter.panel.panel_comm import TARGET
from jupyter_agent.jupyter.bridge.comm_protocol import PANEL_VERSION
from jupyter_agent.testing import response, text, thinking, tool_use
from jupyter_agent.replay.packaged import DEMO_TRANSCRIPT

from .frontend import Frontend, isolated_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "sk-ant-api03-panelsecretvalue123456"


class Panel:
    """What the page's side panel does with the comm, over the kernel's channels."""

    def __init__(self, kernel: Frontend) -> None:
        self.kernel = kernel
        self.comm_id = uuid.uuid4().hex

    def open(self, version: int = PANEL_VERSION) -> Panel:
        kc = self.kernel.kc
        kc.shell_channel.send(kc.session.msg("comm_open", {
            "comm_id": self.comm_id, "target_name": TARGET, "data": {"v": version, "op": "hello"}}))
        return self

    def send(self, **data) -> None:
        self.kernel.comm_msg(self.comm_id, {"v": 1, **data})

    def received(self) -> list[dict]:
        return [m["content"]["data"] for m in self.kernel.messages
                if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == self.comm_id]

    def closed(self) -> bool:
        return any(m["msg_type"] == "comm_close" and m["content"]["comm_id"] == self.comm_id
                   for m in self.kernel.messages)

    def view(self) -> dict:
        """The panel's picture of the kernel, folded from every message so far (as panel.ts does)."""
        picture: dict = {"session": {}, "runs": {}, "order": [], "approvals": [], "errors": []}
        for data in self.received():
            if data["type"] == "state":
                picture["runs"], picture["order"] = {}, []
                picture["approvals"] = data["approvals"]
                for run in data["runs"]:
                    self._merge(picture, run)
            elif data["type"] == "update":
                for run in data["runs"]:
                    self._merge(picture, run)
                for rid in [r for r in picture["runs"] if r not in data["run_ids"]]:
                    del picture["runs"][rid]
                if "approvals" in data:
                    picture["approvals"] = data["approvals"]
            elif data["type"] == "error":
                picture["errors"].append(data["text"])
            picture["session"] = data.get("session", picture["session"])
        return picture

    @staticmethod
    def _merge(picture: dict, run: dict) -> None:
        rid = run["header"]["id"]
        entry = picture["runs"].setdefault(rid, {"items": {}, "order": []})
        entry["header"] = run["header"]
        for item in run["items"]:
            entry["items"][item["key"]] = item
        if "order" in run:
            entry["order"] = run["order"]

    def items(self, kind: str | None = None) -> list[dict]:
        out = []
        for run in self.view()["runs"].values():
            out += [run["items"][k] for k in run["order"] if kind is None or run["items"][k]["kind"] == kind]
        return out

    def headers(self) -> list[dict]:
        return [r["header"] for r in self.view()["runs"].values()]


@pytest_asyncio.fixture(loop_scope="module")
async def panel(kernel):
    await kernel.execute("%agent new")
    p = Panel(kernel).open()
    await kernel.until(lambda: any(d["type"] == "state" for d in p.received()), 10, "the panel's first state")
    yield p


async def test_a_panel_prompt_streams_asks_and_runs_the_tool_in_the_shared_conversation(kernel, panel, script,
                                                                                       module_tmp, api):
    target = module_tmp / "from_panel.txt"
    script(response(thinking("Where to write?"), text("I'll write **the file**."),
                    tool_use("Write", {"file_path": str(target), "content": "hi"}), delay_s=0.005),
           response(text("Written."), delay_s=0.005))
    header = panel.view()["session"]
    assert header["permission_mode"] == "default" and header["busy"] is False and "default" in header["modes"]
    other = Panel(kernel).open()  # a second tab on the same kernel sees the same run
    await kernel.until(lambda: any(d["type"] == "state" for d in other.received()), 10, "the other tab's state")
    panel.send(op="send", prompt="Write hi to from_panel.txt")
    await kernel.until(lambda: panel.view()["approvals"], 10, "the approval in the panel")
    ask = panel.view()["approvals"][0]
    assert ask["tool"] == "Write" and "from_panel.txt" in ask["input"] and ask["rules"]
    # paths inside the working folder read as the cell's approval card shows them
    assert "from_panel.txt" in ask["message"] and str(module_tmp) not in ask["message"], ask["message"]
    assert not target.exists()
    kinds = [i["kind"] for i in panel.items()]
    assert kinds[:3] == ["prompt", "thinking", "text"] and "tool" in kinds
    assert panel.items("text")[0]["text"] == "I'll write **the file**."
    assert panel.items("tool")[0]["state"] == "approval"
    assert panel.headers()[0]["origin"] == "panel" and panel.view()["session"]["busy"]
    panel.send(op="approve", request=ask["id"], choice="allow")
    await kernel.until(lambda: panel.headers() and panel.headers()[0]["ended"], 10, "the end of the run")
    assert target.read_text() == "hi"
    tool = panel.items("tool")[0]
    assert tool["state"] == "done" and tool["decision"] == "Allowed by you." and tool["result"]
    run = panel.headers()[0]
    assert run["reason"] == "completed" and run["usage"]["output_tokens"] > 0
    assert panel.view()["approvals"] == [] and panel.items("text")[-1]["text"] == "Written."
    session = panel.view()["session"]
    assert session["usage"]["output_tokens"] >= run["usage"]["output_tokens"] and not session["busy"]
    # the same conversation as %%agent cells: the next cell's request carries the panel's turn
    script(response(text("You asked me to write hi.")))
    await kernel.execute("%%agent\nWhat did I ask?")
    await kernel.until(lambda: len(panel.headers()) == 2 and panel.headers()[1]["ended"], 10, "the cell's run")
    assert "Write hi to from_panel.txt" in str(api.requests[-1]["messages"][0])
    assert panel.headers()[1]["origin"] == "cell"  # a cell's run shows in the panel too
    # the other tab gets the same updates, a frame later at most
    await kernel.until(lambda: len(other.headers()) == 2 and other.headers()[1]["ended"], 10, "the other tab's runs")
    assert [h["reason"] for h in other.headers()] == ["completed", "completed"]
    # `%agent new` in a cell clears every panel
    await kernel.execute("%agent new")
    await kernel.until(lambda: panel.received()[-1]["type"] == "state" and not panel.view()["runs"]
                       and not other.view()["runs"], 5, "cleared panels")


async def test_deny_with_feedback_and_always_allow_from_the_panel(kernel, panel, script, module_tmp, api):
    a, b = module_tmp / "p_a.txt", module_tmp / "p_b.txt"
    script(response(tool_use("Write", {"file_path": str(a), "content": "1"})),
           response(tool_use("Write", {"file_path": str(b), "content": "2"})),
           response(tool_use("Write", {"file_path": str(a), "content": "3"})),
           response(text("Done.")))
    panel.send(op="send", prompt="Write them")
    await kernel.until(lambda: panel.view()["approvals"], 10, "the first approval")
    panel.send(op="approve", request=panel.view()["approvals"][0]["id"], choice="deny",
               feedback="Use p_b.txt instead.")
    await kernel.until(lambda: panel.view()["approvals"] and
                       "p_b.txt" in panel.view()["approvals"][0]["input"], 10, "the second approval")
    assert "Use p_b.txt instead." in str(api.requests[-1]["messages"][-1]["content"])
    second = panel.view()["approvals"][0]
    assert second["tool_use_id"] == panel.items("tool")[1]["id"]  # the approval names its call
    panel.send(op="approve", tool_use_id=second["tool_use_id"], choice="always")  # answered by that id
    await kernel.until(lambda: panel.headers() and panel.headers()[0]["ended"], 10, "the end")
    assert b.read_text() == "2" and a.read_text() == "3"  # the third write asked nobody
    decisions = [t["decision"] for t in panel.items("tool")]
    assert decisions[0] == "Denied by you: Use p_b.txt instead." and decisions[1].startswith("Always allowed")



async def test_a_cell_runs_approval_is_one_entry_that_the_card_and_the_panel_both_read(kernel, panel, script,
                                                                                        module_tmp):
    """The cell's card and the panel show the same request of the run's broker: answered on
    the card, it is gone from the panel at once, and the panel's answer to it is refused."""
    target = module_tmp / "p_card.txt"
    script(response(tool_use("Write", {"file_path": str(target), "content": "card"})), response(text("Done.")))
    await kernel.execute("%%agent\nWrite p_card.txt")
    allow = await kernel.button("Allow")
    await kernel.until(lambda: panel.view()["approvals"], 10, "the card's approval in the panel")
    (ask,) = panel.view()["approvals"]
    assert ask["tool"] == "Write" and ask["tool_use_id"] == panel.items("tool")[0]["id"]
    kernel.click(allow)
    await kernel.until(lambda: panel.headers() and panel.headers()[0]["ended"], 10, "the end of the run")
    assert target.read_text() == "card" and panel.view()["approvals"] == []
    assert panel.items("tool")[0]["decision"] == "Allowed by you."
    panel.send(op="approve", request=ask["id"], tool_use_id=ask["tool_use_id"], choice="deny")
    await kernel.until(lambda: panel.view()["errors"], 10, "the refusal")
    assert "already answered" in panel.view()["errors"][-1]

async def panel_run_that_writes(kernel, panel, script, target) -> None:
    """A run sent from the panel that writes ``target`` (allowed there), ended: Undo is offered."""
    script(response(tool_use("Write", {"file_path": str(target), "content": "1"})), response(text("Done.")))
    panel.send(op="send", prompt="Write it")
    await kernel.until(lambda: panel.view()["approvals"], 10, "the approval")
    panel.send(op="approve", request=panel.view()["approvals"][0]["id"], choice="allow")
    await kernel.until(lambda: panel.headers() and panel.headers()[-1]["ended"], 10, "the end")
    assert target.read_text() == "1" and panel.headers()[-1]["undo"] == "available"


async def test_undo_this_run_from_the_panel(kernel, panel, script, module_tmp):
    target = module_tmp / "p_undo.txt"
    await panel_run_that_writes(kernel, panel, script, target)
    panel.send(op="undo", run=panel.headers()[-1]["id"])
    await kernel.until(lambda: panel.headers()[-1]["undo"] == "done", 10, "the undo")
    assert not target.exists()
    assert panel.headers()[-1]["undo_lines"] == ["↩ p_undo.txt: removed (the run had created it)"]


async def test_an_undo_made_with_the_magic_reaches_the_panel(kernel, panel, script, module_tmp):
    """``%agent undo`` (not the panel's button) undoes the panel's run: the panel is told, and
    no longer offers Undo this run for it; asking the panel again undoes nothing twice."""
    target = module_tmp / "p_undo_magic.txt"
    await panel_run_that_writes(kernel, panel, script, target)
    assert (await kernel.execute("%agent undo"))["reply"]["status"] == "ok"
    await kernel.until(lambda: panel.headers()[-1]["undo"] == "done", 10, "the panel told of the undo")
    assert not target.exists()
    assert panel.headers()[-1]["undo_lines"] == ["↩ p_undo_magic.txt: removed (the run had created it)"]
    target.write_text("mine")  # the person's own file since: a second undo must not touch it
    told = len(panel.received())
    panel.send(op="undo", run=panel.headers()[-1]["id"])  # (a panel that had not heard yet)
    await kernel.until(lambda: len(panel.received()) > told, 10, "the panel's answer")
    assert panel.headers()[-1]["undo"] == "done" and target.read_text() == "mine"


async def test_an_undo_that_failed_can_be_tried_again(kernel, panel, script, module_tmp):
    """An undo that could not put a change back (a directory where the run's file was) says
    so and offers Undo again; once the cause is gone, the panel's Undo undoes the run."""
    target = module_tmp / "p_undo_failed.txt"
    await panel_run_that_writes(kernel, panel, script, target)
    target.unlink()
    (target / "inside").mkdir(parents=True)  # the person's directory now stands where the file was
    run = panel.headers()[-1]["id"]
    panel.send(op="undo", run=run)
    await kernel.until(lambda: panel.headers()[-1]["undo_lines"], 10, "the failed undo's report")
    header = panel.headers()[-1]
    assert header["undo"] == "available", header  # not "done": it may be tried again
    assert header["undo_lines"][0].startswith("✗ p_undo_failed.txt: ") and "directory" in header["undo_lines"][0]
    assert target.is_dir()
    (target / "inside").rmdir()
    target.rmdir()
    target.write_text("1")  # as the run left it
    panel.send(op="undo", run=run)
    await kernel.until(lambda: panel.headers()[-1]["undo"] == "done", 10, "the second undo")
    assert not target.exists()
    assert panel.headers()[-1]["undo_lines"] == ["↩ p_undo_failed.txt: removed (the run had created it)"]


async def test_the_panel_shows_the_context_meter_and_compacts_now(kernel, panel, script):
    script(response(text("First answer.")), response(text("Summary of the first answer.")))
    await kernel.execute("%config AgentConfig.context_window = 40000")
    try:
        panel.send(op="send", prompt="Say something, my-words-8")
        await kernel.until(lambda: panel.headers() and panel.headers()[-1]["ended"], 10, "the first run's end")
        meter = panel.headers()[-1]["context"]
        assert meter.startswith("context ") and "/ 40k" in meter and "compacts at " in meter, meter
        await kernel.until(lambda: panel.view()["session"].get("context") == meter, 5, "the session's meter")
        panel.send(op="compact")
        await kernel.until(lambda: len(panel.headers()) == 2 and panel.headers()[-1]["ended"], 10, "the compaction")
        history = await kernel.value("__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['_'])"
                                     ".get_session().conversation.messages")
    finally:
        await kernel.execute("%config AgentConfig.context_window = 0")
    assert panel.headers()[-1]["reason"] == "completed"
    assert any(item["text"].startswith("Compacted: ") for item in panel.items("notice")), panel.items("notice")
    assert "Summary of the first answer." in history and "my-words-8" in history


async def test_stop_new_conversation_and_mode_from_the_panel(kernel, panel, script):
    script(response(text("A long answer. " * 200), delay_s=0.01, chunk_chars=4))  # 750 deltas, ~7.5 s
    panel.send(op="mode", mode="plan")
    await kernel.until(lambda: panel.view()["session"]["permission_mode"] == "plan", 5, "the mode")
    assert (await kernel.value("__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['_'])"
                               ".get_session().conversation.permission_mode")) == "'plan'"
    panel.send(op="send", prompt="Talk")
    await kernel.until(lambda: panel.items("text") and "A long answer." in panel.items("text")[0]["text"],
                       10, "streamed text")
    updates = len([d for d in panel.received() if d["type"] == "update"])
    await kernel.until(lambda: len(panel.items("text")[0]["text"]) > 600, 10, "150 more deltas")
    # ~150 deltas in ~1.5 s: one message per frame (60 ms), not one per delta
    streamed = len([d for d in panel.received() if d["type"] == "update"]) - updates
    assert streamed < 50, streamed
    panel.send(op="send", prompt="Again")  # one run at a time: refused, said in the panel
    await kernel.until(lambda: panel.view()["errors"], 5, "the refusal")
    assert "still going" in panel.view()["errors"][-1]
    panel.send(op="stop")
    await kernel.until(lambda: panel.headers() and panel.headers()[0]["ended"], 10, "the stop")
    assert panel.headers()[0]["reason"] == "aborted_streaming"
    panel.send(op="new")
    await kernel.until(lambda: panel.received()[-1]["type"] == "state" and not panel.view()["runs"], 5,
                       "the cleared panel")
    panel.send(op="mode", mode="default")
    await kernel.until(lambda: panel.view()["session"]["permission_mode"] == "default", 5, "the mode back")


def _outside_row(table: str) -> str:
    """The ``%agent runs`` line of the outside agent's run."""
    return next(line for line in table.splitlines() if "of Claude Code" in line)


async def test_an_outside_agents_run_says_the_same_in_the_panel_and_in_agent_runs(module_tmp, api):
    """An MCP client's run (no model, no turns): while its call waits, both say it runs;
    after, both say its calls so far completed and count its calls, not "0 turns".
    (A kernel of its own: an outside run stays in the panel through ``%agent new``.)"""
    work = module_tmp / "outside"
    work.mkdir()
    own = await Frontend(work, isolated_env(work, **api.env())).start()
    try:
        await own.execute("%load_ext jupyter_agent")
        panel = Panel(own).open()
        await own.until(lambda: any(d["type"] == "state" for d in panel.received()), 10, "the state")
        await own.execute("import asyncio\nfrom jupyter_agent.jupyter.kernel.agent_session import get_session\n"
                          "_outside = get_session().services.outside_hub.run_for('Claude Code')\n"
                          "_call = asyncio.ensure_future(_outside.ask_restart('nb.ipynb', []))")
        await own.until(lambda: panel.view()["approvals"], 10, "the outside call's approval")
        (header,) = panel.headers()
        assert header["origin"] == "outside" and not header["ended"] and header["calls"] == 0
        assert "waiting for your approval" in header["status"]
        table = (await own.execute("%agent runs"))["outputs"][0]["text"]
        assert _outside_row(table).split()[1:3] == ["running", "—"], table
        panel.send(op="approve", request=panel.view()["approvals"][0]["id"], choice="deny")
        await own.until(lambda: panel.headers()[0]["ended"], 10, "the call's end")
        (header,) = panel.headers()
        assert header["reason"] == "completed" and header["calls"] == 1
        row = _outside_row((await own.execute("%agent runs"))["outputs"][0]["text"])
        assert row.split()[1:3] == ["completed", "—"] and row.endswith("1 call of Claude Code"), row
    finally:
        await own.stop()


async def test_bad_requests_are_refused_and_secrets_never_sent(kernel, panel, script, module_tmp):
    panel.send(op="format_disk")
    kernel.comm_msg(panel.comm_id, {"v": 99, "op": "send", "prompt": "x"})
    panel.send(op="approve", request=12345, choice="allow")
    await kernel.until(lambda: len(panel.view()["errors"]) == 3, 5, "three refusals")
    first, second, third = panel.view()["errors"]
    assert "unknown request ('format_disk')" in first and "panel protocol 99" in second
    assert "already answered" in third
    secret_file = module_tmp / "env.txt"
    secret_file.write_text(f"ANTHROPIC_API_KEY={SECRET}\n")
    script(response(tool_use("Read", {"file_path": str(secret_file)})), response(text(f"The key is {SECRET}.")))
    panel.send(op="send", prompt=f"Read env.txt, my key is {SECRET}")
    await kernel.until(lambda: panel.headers() and panel.headers()[0]["ended"], 10, "the end")
    sent = str(panel.received())
    assert SECRET not in sent and "[redacted" in sent


async def test_a_panel_of_another_protocol_version_is_told_to_reload_and_sent_nothing_else(kernel, panel):
    """The panel's hello (the comm's open data) is version-checked: a page of another
    version would misread every state and update."""
    old = Panel(kernel).open(version=PANEL_VERSION + 98)
    await kernel.until(lambda: old.received(), 10, "the kernel's answer")
    await kernel.execute("1")  # give the kernel every chance to send more
    (only,) = old.received()
    assert only["type"] == "error" and only["v"] == PANEL_VERSION
    assert f"panel protocol {PANEL_VERSION + 98}" in only["text"] and "reload the page" in only["text"]


async def test_a_kernel_without_the_extension_closes_the_panel_comm(module_tmp, api):
    env = isolated_env(module_tmp / "bare", **api.env())
    bare = await Frontend(module_tmp, env).start()
    try:
        panel = Panel(bare).open()
        await bare.until(panel.closed, 10, "the comm to be closed")
        assert panel.received() == []
        await bare.execute("%load_ext jupyter_agent")  # then the panel's next try connects
        again = Panel(bare).open()
        await bare.until(lambda: any(d["type"] == "state" for d in again.received()), 10, "the state")
        await bare.execute("%unload_ext jupyter_agent")
        await bare.until(again.closed, 10, "the comm closed at unload")
    finally:
        await bare.stop()


async def test_offline_as_dev_demo_starts_it_the_panel_replays_the_demo(module_tmp):
    """No API key, JUPYTER_AGENT_REPLAY set (what ./dev demo does offline): a prompt from the
    panel replays the recorded session on real files, and the panel says it is a replay."""
    work = module_tmp / "offline"
    work.mkdir()
    env = isolated_env(work, JUPYTER_AGENT_REPLAY="demo")  # a packaged transcript's name works too
    offline = await Frontend(work, env).start()
    try:
        await offline.execute("%load_ext jupyter_agent")
        panel = Panel(offline).open()
        await offline.until(lambda: any(d["type"] == "state" for d in panel.received()), 10, "the state")
        assert panel.view()["session"]["replay"] == DEMO_TRANSCRIPT.name
        panel.send(op="send", prompt="Show me what you can do")
        answered: set[str] = set()
        for what in ("read", "edit"):  # in its scratch folder, outside the working folder: both ask
            pending = lambda: [a for a in panel.view()["approvals"] if a["id"] not in answered]  # noqa: E731
            request = (await offline.until(pending, 20, f"the replayed {what}'s approval"))[0]["id"]
            answered.add(request)
            panel.send(op="approve", request=request, choice="allow")
        await offline.until(lambda: panel.headers() and panel.headers()[0]["ended"], 20, "the end")
        assert panel.headers()[0]["reason"] == "completed"
        assert not (work / "notes.txt").exists()  # the replay works in its own scratch folder
        assert "Offline replay — your prompt is not used" in str(panel.items("notice"))
        # once a run made the model, the header still says it replays, and shows no cost
        await offline.until(lambda: panel.view()["session"].get("busy") is False, 20, "the header's end")
        session = panel.view()["session"]
        assert session["replay"] == DEMO_TRANSCRIPT.name and session["usage"]["cost_usd"] is None, session
        assert session["usage"]["input_tokens"] > 0
    finally:
        await offline.stop()
