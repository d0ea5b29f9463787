"""``%agent undo``: a run's files and cells put back, the user's later work left alone, the
kernel's changed names said. A real kernel (the test plays JupyterLab), the file backend,
the real SDK against the fake Messages API."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import pytest_asyncio

from jupyter_agent.testing import response, text, tool_use

from .test_kernel_magic import display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def kernel(kernel):
    """The module's kernel with a new conversation in acceptEdits mode (edits in the
    working folder run without a click; a cell run still asks)."""
    assert (await kernel.execute("%agent stop"))["reply"]["status"] == "ok"
    reset = await kernel.execute("%agent new --permission-mode acceptEdits --max-turns 0")
    assert reset["reply"]["status"] == "ok", reset["outputs"]
    return kernel


def notebook(path: Path, *sources: str) -> None:
    """A notebook whose cells are c0, c1, ... with these sources; c0 has an output."""
    cells = [nbformat.v4.new_code_cell(source, id=f"c{i}") for i, source in enumerate(sources)]
    cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "41"}, execution_count=1)]
    cells[0].execution_count = 1
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


def cells(path: Path) -> list[tuple[str, str]]:
    return [(c.id, c.source) for c in nbformat.read(path, as_version=4).cells]


async def undo(kernel, line: str = "%agent undo", timeout: float = 10) -> str:
    """Run ``%agent undo ...`` and return the report it shows once the undo is done."""
    result = await kernel.execute(line)
    assert result["reply"]["status"] == "ok", result
    shown = [o for o in result["outputs"] if o["msg_type"] == "display_data"]
    assert len(shown) == 1, result["outputs"]
    data, display_id = shown[0]["data"], shown[0]["transient"]["display_id"]
    if "putting the changes back" not in data["text/markdown"]:
        return data["text/markdown"]
    updates = await kernel.until(lambda: kernel.display_updates(display_id), timeout, "the undo's report")
    return updates[-1]["data"].get("text/markdown") or updates[-1]["data"]["text/plain"]


async def undo_column(kernel) -> str:
    """The undo column of ``%agent runs``' last run (its header names it)."""
    table = (await kernel.execute("%agent runs"))["outputs"][0]["text"].strip().splitlines()
    assert table[0].split()[6] == "undo", table[0]
    return table[-1].split()[5]


async def test_undo_puts_back_files_and_cells(kernel, script, api, module_tmp):
    folder = module_tmp / "undo_all"
    folder.mkdir()
    edited, created, nb = folder / "a.txt", folder / "b.txt", folder / "nb.ipynb"
    edited.write_bytes(b"one\ntwo\n")
    edited.chmod(0o640)
    notebook(nb, "x = 41", "print(x)")
    before_nb = nb.read_bytes()
    script(response(tool_use("Read", {"file_path": str(edited)}), tool_use("Read", {"file_path": str(nb)})),
           response(tool_use("Edit", {"file_path": str(edited), "old_string": "one", "new_string": "ONE"}),
                    tool_use("Write", {"file_path": str(created), "content": "new file\n"}),
                    tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c0", "new_source": "x = 1"})),
           response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "y = 2",
                                              "cell_type": "code", "edit_mode": "insert"})),
           response(text("Changed a.txt, wrote b.txt, edited the notebook.")))
    result = await kernel.execute("%%agent\nChange things")
    md = await transcript(kernel, display_id_of(result))
    assert edited.read_text() == "ONE\ntwo\n" and created.exists() and len(cells(nb)) == 3
    # the end of the run lists each change with its own diff
    assert "**Changes** (4;" in md and "changed undo\\_all/a.txt" not in md
    for words in ("changed undo_all/a.txt", "created undo_all/b.txt", "replaced cell undo_all/nb.ipynb (cell c0)",
                  "inserted cell undo_all/nb.ipynb (cell "):
        assert words in md, words
    assert "-one" in md and "+ONE" in md and "+y = 2" in md

    report = await undo(kernel)
    assert edited.read_bytes() == b"one\ntwo\n" and oct(edited.stat().st_mode & 0o777) == "0o640"
    assert not created.exists()
    assert cells(nb) == [("c0", "x = 41"), ("c1", "print(x)")]
    assert nb.read_bytes() == before_nb  # outputs, counts and formatting too
    assert "undo_all/a.txt: put back as it was" in report and "undo_all/b.txt: removed" in report
    assert "left as it is" not in report
    # a second undo of the same run changes nothing and says the same
    assert await undo(kernel) == report

    # the next request tells the model what the user undid
    script(response(text("Understood.")))
    result = await kernel.execute("%%agent\nWhat now?")
    await transcript(kernel, display_id_of(result))
    first_block = api.requests[-1]["messages"][-1]["content"][0]["text"]
    assert "The user undid the changes of your previous run" in first_block
    assert f"{created}: created by your run, removed again" in first_block
    assert "What now?" in str(api.requests[-1]["messages"][-1])
    assert "undid" not in str(api.requests[-1]["messages"][:-1])  # said once, with the next prompt


async def test_undo_leaves_a_file_changed_after_the_run(kernel, script, module_tmp):
    folder = module_tmp / "undo_later"
    folder.mkdir()
    mine, other = folder / "mine.txt", folder / "other.txt"
    mine.write_text("a\n")
    other.write_text("b\n")
    script(response(tool_use("Read", {"file_path": str(mine)}), tool_use("Read", {"file_path": str(other)})),
           response(tool_use("Write", {"file_path": str(mine), "content": "agent\n"}),
                    tool_use("Write", {"file_path": str(other), "content": "agent\n"})),
           response(text("Both written.")))
    result = await kernel.execute("%%agent\nWrite both")
    display_id = display_id_of(result)
    await transcript(kernel, display_id)
    mine.write_text("the user's later work\n")  # after the run
    # the ended run's card has its own Undo button (the widget after the transcript)
    kernel.click(await kernel.button("Undo this run"))

    def undone() -> str:
        md = kernel.display_updates(display_id)[-1]["data"].get("text/markdown", "")
        return md.split("**↩ Undone**")[1] if "**↩ Undone**" in md else ""

    report = await kernel.until(undone, 10, "the undo, kept in the cell's transcript")
    assert mine.read_text() == "the user's later work\n" and other.read_text() == "b\n"
    assert "undo_later/mine.txt: changed since the run; left as it is" in report
    assert "undo_later/other.txt: put back as it was" in report
    assert "1 change left as it is" in report
    assert not kernel.buttons("Undo this run")  # once


async def test_an_undo_that_failed_is_tried_again_from_the_cell(kernel, script, module_tmp):
    """The cell's Undo this run, failed on a file (a directory stands where it was): the
    transcript says what failed, the button stays; once the file is back, a second click
    puts it back, and reports the file the first click had already put back as put back."""
    folder = module_tmp / "undo_again"
    folder.mkdir()
    blocked, other = folder / "blocked.txt", folder / "other.txt"
    blocked.write_text("a\n")
    other.write_text("b\n")
    script(response(tool_use("Read", {"file_path": str(blocked)}), tool_use("Read", {"file_path": str(other)})),
           response(tool_use("Write", {"file_path": str(blocked), "content": "agent\n"}),
                    tool_use("Write", {"file_path": str(other), "content": "agent\n"})),
           response(text("Both written.")))
    display_id = display_id_of(await kernel.execute("%%agent\nWrite both"))
    await transcript(kernel, display_id)
    assert await undo_column(kernel) == "no"  # not undone yet
    blocked.rename(folder / "aside.txt")
    blocked.mkdir()

    def undone(words: str, title: str = "**↩ Undone**") -> str:
        md = kernel.display_updates(display_id)[-1]["data"].get("text/markdown", "")
        shown = md.split(title)[1] if title in md else ""
        return shown if words in shown else ""

    kernel.click(await kernel.button("Undo this run"))
    report = await kernel.until(lambda: undone("could not be put back", "**↩ Undone in part**"), 10, "the failed undo")
    assert "undo_again/other.txt: put back as it was" in report and other.read_text() == "b\n"
    assert "undo_again/blocked.txt: could not be put back" in report and "Is a directory" in report
    assert "then undo the run again" in report
    again = await kernel.button("Undo this run")  # enabled again, saying what to do
    assert "fix that, then undo again" in kernel.widget_text()
    assert await undo_column(kernel) == "failed"
    blocked.rmdir()
    (folder / "aside.txt").rename(blocked)
    kernel.click(again)
    report = await kernel.until(lambda: undone("blocked.txt: put back as it was"), 10, "the second undo")
    assert blocked.read_text() == "a\n" and other.read_text() == "b\n"
    assert "could not" not in report
    assert "undo_again/other.txt: put back as it was" in report  # (not "already as before")
    assert not kernel.buttons("Undo this run")
    assert await undo_column(kernel) == "undone"


async def test_undo_does_not_write_through_a_link_put_in_the_way(kernel, script, module_tmp):
    folder, elsewhere = module_tmp / "undo_link", module_tmp / "undo_link_elsewhere"
    (folder / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    made = folder / "sub" / "made.txt"
    script(response(tool_use("Write", {"file_path": str(made), "content": "agent\n"})), response(text("Made.")))
    result = await kernel.execute("%%agent\nMake it")
    await transcript(kernel, display_id_of(result))
    assert made.read_text() == "agent\n"
    # since the run, sub/ became a link to another folder holding a file of the same bytes
    (folder / "sub").rename(folder / "sub.old")
    (elsewhere / "made.txt").write_text("agent\n")
    (folder / "sub").symlink_to(elsewhere)
    report = await undo(kernel)
    assert (elsewhere / "made.txt").read_text() == "agent\n"  # not removed through the link
    assert "undo_link/sub/made.txt: refused; left as it is (a symbolic link now leads it to" in report


async def test_a_run_that_ran_a_cell_says_which_variables_changed(kernel, script, module_tmp):
    folder = module_tmp / "undo_vars"
    folder.mkdir()
    nb = folder / "vars.ipynb"
    notebook(nb, "zz_total = sum([1, 2, 3])\nzz_total")
    script(response(tool_use("Read", {"file_path": str(nb)})),
           response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "c0"})),
           response(text("zz_total is 6.")))
    result = await kernel.execute("%%agent\nRun the cell")
    kernel.click(await kernel.button("Allow", timeout=30))
    md = await transcript(kernel, display_id_of(result), timeout=60)
    assert md.rstrip().endswith("variables changed: zz_total"), md[-300:]
    report = await undo(kernel)
    assert "variables changed: zz_total (undoing cells does not undo what they did in the kernel" in report


async def test_undo_a_run_stopped_halfway(kernel, script, module_tmp):
    folder = module_tmp / "undo_stopped"
    folder.mkdir()
    done, never = folder / "done.txt", folder / "never.txt"
    script(response(tool_use("Write", {"file_path": str(done), "content": "written\n"})),
           response(tool_use("Write", {"file_path": str(module_tmp.parent / "outside.txt"), "content": "x"})))
    result = await kernel.execute("%%agent\nWrite two files")
    await kernel.button("Allow")  # the second write (outside the folder) waits for a click
    assert done.exists()
    kernel.click(kernel.buttons("Stop")[-1])
    md = await transcript(kernel, display_id_of(result))
    assert "Stopped" in md and not never.exists()
    report = await undo(kernel)
    assert not done.exists() and "undo_stopped/done.txt: removed" in report


async def test_undo_a_run_whose_edit_failed(kernel, script, module_tmp):
    folder = module_tmp / "undo_failed"
    folder.mkdir()
    good, bad = folder / "good.txt", folder / "bad.txt"
    good.write_text("good\n")
    bad.write_text("bad\n")
    script(response(tool_use("Read", {"file_path": str(good)}), tool_use("Read", {"file_path": str(bad)})),
           response(tool_use("Edit", {"file_path": str(good), "old_string": "good", "new_string": "better"}),
                    tool_use("Edit", {"file_path": str(bad), "old_string": "not there", "new_string": "x"})),
           response(text("One edit failed.")))
    result = await kernel.execute("%%agent\nEdit both")
    md = await transcript(kernel, display_id_of(result))
    assert "String to replace not found" in md and good.read_text() == "better\n"
    report = await undo(kernel)
    assert good.read_text() == "good\n" and bad.read_text() == "bad\n"
    assert "undo_failed/good.txt: put back as it was" in report and "bad.txt" not in report


async def test_undo_names_a_run_that_does_not_exist(kernel, script):
    # A run of its own first: the module's kernel may have had none yet (tests run in any order),
    # and then the refusal is "No runs yet", not the one under test.
    script(response(text("Nothing to do.")))
    await kernel.execute("%%agent --wait\nSay hi")  # (--wait: its request is made before the test ends)
    result = await kernel.execute("%agent undo 999")
    assert result["reply"]["status"] == "error" and "There is no run 999" in str(result["outputs"])
