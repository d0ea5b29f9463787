"""Write and Edit: read first, refuse stale files, keep encoding/endings/mode, write atomically."""

from __future__ import annotations

import os
import stat

import pytest

from jupyter_agent.files import atomic

from .conftest import call_tool, text_of


async def read(ctx, path, **kw):
    result = await call_tool(ctx, "Read", {"file_path": str(path), **kw})
    assert not result.get("is_error"), result
    return result


# --- read before write ----------------------------------------------------------------------

async def test_write_to_an_unread_existing_file_is_refused(ctx, workspace):
    (workspace / "a.txt").write_text("keep me\n")
    result = await call_tool(ctx, "Write", {"file_path": "a.txt", "content": "clobber"})
    assert result["is_error"] and "has not been read yet" in result["content"]
    assert (workspace / "a.txt").read_text() == "keep me\n"


async def test_write_after_read_replaces_the_file(ctx, workspace):
    (workspace / "a.txt").write_text("old\n")
    await read(ctx, workspace / "a.txt")
    result = await call_tool(ctx, "Write", {"file_path": "a.txt", "content": "new\n"})
    assert result["content"] == f"The file {workspace / 'a.txt'} has been updated."
    assert (workspace / "a.txt").read_text() == "new\n"


async def test_write_creates_new_files_and_folders_without_a_read(ctx, workspace):
    result = await call_tool(ctx, "Write", {"file_path": "deep/er/new.txt", "content": "hi\n"})
    assert result["content"] == f"File created successfully at: {workspace / 'deep/er/new.txt'}"
    assert (workspace / "deep/er/new.txt").read_text() == "hi\n"
    assert stat.S_IMODE((workspace / "deep/er/new.txt").stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("tool,args", [
    ("Write", {"content": "mine\n"}),
    ("Edit", {"old_string": "base", "new_string": "mine"}),
])
async def test_a_file_changed_since_read_is_refused(ctx, workspace, tool, args):
    path = workspace / "a.txt"
    path.write_text("base\n")
    await read(ctx, path)
    path.write_text("base changed by the user\n")
    result = await call_tool(ctx, tool, {"file_path": "a.txt", **args})
    assert result["is_error"] and "has been modified since read" in result["content"]
    assert path.read_text() == "base changed by the user\n"


async def test_same_content_rewritten_with_new_mtime_is_not_stale(ctx, workspace):
    path = workspace / "a.txt"
    path.write_text("same\n")
    await read(ctx, path)
    os.utime(path, ns=(1, 1))  # touched, not changed
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "same", "new_string": "new"})
    assert not result.get("is_error") and path.read_text() == "new\n"


async def test_edit_needs_the_whole_file_read(ctx, workspace):
    path = workspace / "long.txt"
    path.write_text("".join(f"{i}\n" for i in range(10)))
    await read(ctx, path, limit=3)
    result = await call_tool(ctx, "Edit", {"file_path": "long.txt", "old_string": "9\n", "new_string": "nine\n"})
    assert result["is_error"] and "only been read in part (lines 1-3)" in result["content"]
    await read(ctx, path, offset=4)
    result = await call_tool(ctx, "Edit", {"file_path": "long.txt", "old_string": "9\n", "new_string": "nine\n"})
    assert not result.get("is_error") and path.read_text().endswith("8\nnine\n")


async def test_consecutive_edits_need_no_new_read(ctx, workspace):
    path = workspace / "a.py"
    path.write_text("x = 1\ny = 2\n")
    await read(ctx, path)
    for old, new in (("x = 1", "x = 10"), ("y = 2", "y = 20")):
        result = await call_tool(ctx, "Edit", {"file_path": "a.py", "old_string": old, "new_string": new})
        assert not result.get("is_error"), result
    assert path.read_text() == "x = 10\ny = 20\n"


# --- Edit's own rules -----------------------------------------------------------------------

async def test_edit_reports_a_snippet_with_line_numbers(ctx, workspace):
    path = workspace / "a.py"
    path.write_text("".join(f"line{i}\n" for i in range(1, 21)))
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "a.py", "old_string": "line10", "new_string": "TEN"})
    assert "has been updated" in result["content"]
    assert "10\tTEN" in result["content"] and "6\tline6" in result["content"] and "20\t" not in result["content"]


async def test_absent_old_string_fails_clearly(ctx, workspace):
    (workspace / "a.txt").write_text("hello\n")
    await read(ctx, workspace / "a.txt")
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "goodbye", "new_string": "x"})
    assert result["is_error"] and result["content"].startswith("String to replace not found in file.")


async def test_ambiguous_old_string_needs_replace_all(ctx, workspace):
    path = workspace / "a.txt"
    path.write_text("foo bar foo\n")
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "foo", "new_string": "baz"})
    assert result["is_error"] and "Found 2 matches" in result["content"] and "replace_all" in result["content"]
    assert path.read_text() == "foo bar foo\n"
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "foo", "new_string": "baz",
                                           "replace_all": True})
    assert not result.get("is_error") and path.read_text() == "baz bar baz\n"


async def test_identical_strings_are_refused(ctx, workspace):
    (workspace / "a.txt").write_text("x\n")
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "x", "new_string": "x"})
    assert result["is_error"] and "No changes to make" in result["content"]


async def test_empty_old_string_creates_a_file_but_never_overwrites(ctx, workspace):
    result = await call_tool(ctx, "Edit", {"file_path": "fresh.txt", "old_string": "", "new_string": "new\n"})
    assert not result.get("is_error") and (workspace / "fresh.txt").read_text() == "new\n"
    await read(ctx, workspace / "fresh.txt")
    result = await call_tool(ctx, "Edit", {"file_path": "fresh.txt", "old_string": "", "new_string": "other"})
    assert result["is_error"] and "already exists" in result["content"]


async def test_edit_on_a_notebook_points_to_notebook_edit(ctx, workspace):
    (workspace / "n.ipynb").write_text("{}")
    result = await call_tool(ctx, "Edit", {"file_path": "n.ipynb", "old_string": "a", "new_string": "b"})
    assert result["is_error"] and "Use the NotebookEdit tool" in result["content"]


# --- the file keeps its form ----------------------------------------------------------------

async def test_crlf_file_keeps_crlf_through_edit_and_write(ctx, workspace):
    path = workspace / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await read(ctx, path)
    await call_tool(ctx, "Edit", {"file_path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"
    await read(ctx, path)
    await call_tool(ctx, "Write", {"file_path": "win.txt", "content": "a\nb\n"})
    assert path.read_bytes() == b"a\r\nb\r\n"


async def test_encoding_bom_and_invalid_bytes_survive_an_edit(ctx, workspace):
    bom = workspace / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfname = 'x'\n")
    u16 = workspace / "u16.txt"
    u16.write_bytes("\ufeffhällo welt\n".encode("utf-16-le"))
    latin = workspace / "latin.txt"
    latin.write_bytes(b"caf\xe9 = 1\nother = 2\n")
    for path, old, new in ((bom, "'x'", "'y'"), (u16, "welt", "Welt"), (latin, "other = 2", "other = 3")):
        await read(ctx, path)
        result = await call_tool(ctx, "Edit", {"file_path": path.name, "old_string": old, "new_string": new})
        assert not result.get("is_error"), result
    assert bom.read_bytes() == b"\xef\xbb\xbfname = 'y'\n"
    assert u16.read_bytes() == "\ufeffhällo Welt\n".encode("utf-16-le")
    assert latin.read_bytes() == b"caf\xe9 = 1\nother = 3\n"  # the invalid byte is kept as it was


async def test_file_mode_is_kept(ctx, workspace):
    path = workspace / "run.sh"
    path.write_text("echo hi\n")
    path.chmod(0o751)
    await read(ctx, path)
    await call_tool(ctx, "Edit", {"file_path": "run.sh", "old_string": "hi", "new_string": "ho"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o751 and path.read_text() == "echo ho\n"


async def test_writing_through_a_symlink_keeps_the_link(ctx, workspace):
    (workspace / "real.txt").write_text("v1\n")
    (workspace / "link.txt").symlink_to("real.txt")
    await read(ctx, workspace / "link.txt")
    result = await call_tool(ctx, "Edit", {"file_path": "link.txt", "old_string": "v1", "new_string": "v2"})
    assert not result.get("is_error")
    assert (workspace / "link.txt").is_symlink() and (workspace / "real.txt").read_text() == "v2\n"


async def test_a_crash_mid_write_leaves_the_old_file_and_no_litter(ctx, workspace, monkeypatch):
    path = workspace / "a.txt"
    path.write_text("old content\n")
    await read(ctx, path)

    def crash(src, dst, **dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "rename", crash)
    result = await call_tool(ctx, "Write", {"file_path": "a.txt", "content": "new content\n"})
    assert result["is_error"] and "No space left" in text_of(result)
    assert path.read_text() == "old content\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]


async def test_characters_the_encoding_cannot_hold_are_refused(ctx, workspace):
    path = workspace / "u16.txt"
    path.write_bytes("\ufeffplain\n".encode("utf-16-le"))
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "u16.txt", "old_string": "plain", "new_string": "\ud800"})
    assert result["is_error"] and "cannot be encoded" in result["content"]
    assert path.read_bytes() == "\ufeffplain\n".encode("utf-16-le")


# --- curly quotes (issue 7.9) ---------------------------------------------------------------

async def test_straight_quotes_find_curly_ones_and_the_file_keeps_its_quotes(ctx, workspace):
    path = workspace / "essay.md"
    path.write_text("She said \u201chello\u201d and it\u2019s \u2018fine\u2019.\nNext line.\n")
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "essay.md",
                                           "old_string": "She said \"hello\" and it's 'fine'.",
                                           "new_string": "She said \"good night\" and it's 'over' now."})
    assert not result.get("is_error"), result
    assert path.read_text() == "She said \u201cgood night\u201d and it\u2019s \u2018over\u2019 now.\nNext line.\n"


async def test_a_file_with_straight_quotes_gets_none_curly(ctx, workspace):
    path = workspace / "code.py"
    path.write_text("print('hi')\n")
    await read(ctx, path)
    await call_tool(ctx, "Edit", {"file_path": "code.py", "old_string": "print('hi')",
                                  "new_string": "print(\"it's\")"})
    assert path.read_text() == "print(\"it's\")\n"


async def test_only_the_quote_kind_the_file_used_turns_curly(ctx, workspace):
    path = workspace / "a.txt"
    path.write_text("a \u201cquoted\u201d word\n")  # doubles only
    await read(ctx, path)
    await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": 'a "quoted" word',
                                  "new_string": "a \"quoted\" word, isn't it, 'friend'"})
    assert path.read_text() == "a \u201cquoted\u201d word, isn't it, 'friend'\n"


async def test_low_and_reversed_quotes_match_too_and_uniqueness_still_counts(ctx, workspace):
    path = workspace / "de.txt"
    path.write_text("Er sagte \u201eja\u201c.\nEr sagte \u201eja\u201c.\n")
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "de.txt", "old_string": 'sagte "ja"',
                                           "new_string": 'sagte "nein"'})
    assert result["is_error"] and "Found 2 matches" in result["content"]
    result = await call_tool(ctx, "Edit", {"file_path": "de.txt", "old_string": 'sagte "ja"',
                                           "new_string": 'sagte "nein"', "replace_all": True})
    assert not result.get("is_error"), result
    # „ is not in Claude Code's curly set: new quotes are written “ ” where the file had curly ones
    assert path.read_text() == "Er sagte \u201cnein\u201d.\nEr sagte \u201cnein\u201d.\n"


def test_quote_helpers_keep_positions_and_apostrophes():
    from jupyter_agent.tools.quotes import find_actual_string, normalize_quotes, preserve_quote_style

    text = "(\u2018a\u2019) \u201cb\u201d \u201ac\u201b \u201ed\u201f"
    assert normalize_quotes(text) == "('a') \"b\" 'c' \"d\"" and len(normalize_quotes(text)) == len(text)
    assert find_actual_string(text, "\"b\"") == "\u201cb\u201d"
    assert find_actual_string(text, "nothing") is None
    assert preserve_quote_style("'x'", "\u2018x\u2019", "('don't' \u2014'y')") == \
        "(\u2018don\u2019t\u2019 \u2014\u2018y\u2019)"
