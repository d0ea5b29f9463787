"""Read: numbered lines, paging, images, binaries, encodings, and what it records."""

from __future__ import annotations

import base64
import struct
import zlib

from .conftest import call_tool, text_of


def tiny_png() -> bytes:
    """A real 1x1 PNG (built by hand: no imaging library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


async def test_lines_are_numbered_with_a_tab_like_cat_n(ctx, workspace):
    (workspace / "a.py").write_text("import os\n\nprint(os.sep)\n")
    result = await call_tool(ctx, "Read", {"file_path": str(workspace / "a.py")})
    assert not result.get("is_error")
    assert result["content"] == "1\timport os\n2\t\n3\tprint(os.sep)"


async def test_relative_paths_resolve_against_the_working_folder(ctx, workspace):
    (workspace / "sub").mkdir()
    (workspace / "sub" / "n.txt").write_text("hi\n")
    result = await call_tool(ctx, "Read", {"file_path": "sub/n.txt"})
    assert result["content"] == "1\thi"


async def test_offset_and_limit_page_and_say_how_to_go_on(ctx, workspace):
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await call_tool(ctx, "Read", {"file_path": "big.txt", "offset": 10, "limit": 5})
    body = text_of(result)
    assert body.splitlines()[:5] == [f"{i}\tline {i}" for i in range(10, 15)]
    assert "Showing lines 10-14 of 100" in body and "offset=15" in body


async def test_default_page_is_2000_lines(ctx, workspace):
    (workspace / "huge.txt").write_text("x\n" * 2500)
    body = text_of(await call_tool(ctx, "Read", {"file_path": "huge.txt"}))
    assert "2000\tx" in body and "2001\tx" not in body and "offset=2001" in body


async def test_long_lines_are_cut(ctx, workspace):
    (workspace / "wide.txt").write_text("y" * 5000 + "\n")
    body = text_of(await call_tool(ctx, "Read", {"file_path": "wide.txt"}))
    assert len(body) < 2200 and "3,000 more characters" in body


async def test_empty_file_and_offset_past_the_end_are_explained(ctx, workspace):
    (workspace / "empty.txt").write_text("")
    (workspace / "short.txt").write_text("a\nb\n")
    assert "contents are empty" in text_of(await call_tool(ctx, "Read", {"file_path": "empty.txt"}))
    body = text_of(await call_tool(ctx, "Read", {"file_path": "short.txt", "offset": 9}))
    assert "shorter than the provided offset (9)" in body and "2 lines" in body


async def test_missing_file_error_suggests_a_close_name(ctx, workspace):
    (workspace / "notes.txt").write_text("n\n")
    result = await call_tool(ctx, "Read", {"file_path": "note.txt"})
    assert result["is_error"] and "does not exist" in result["content"] and "notes.txt" in result["content"]


async def test_directory_is_refused_with_a_pointer_to_glob(ctx, workspace):
    (workspace / "d").mkdir()
    result = await call_tool(ctx, "Read", {"file_path": "d"})
    assert result["is_error"] and "directory" in result["content"] and "Glob" in result["content"]


async def test_binary_file_is_refused_clearly(ctx, workspace):
    (workspace / "blob.dat").write_bytes(b"\x00\x01\x02binary\x00")
    (workspace / "arch.zip").write_bytes(b"PK\x03\x04 not really")
    for name in ("blob.dat", "arch.zip"):
        result = await call_tool(ctx, "Read", {"file_path": name})
        assert result["is_error"] and "binary file" in result["content"]


async def test_png_is_returned_as_an_image_block(ctx, workspace):
    png = tiny_png()
    (workspace / "dot.png").write_bytes(png)
    result = await call_tool(ctx, "Read", {"file_path": "dot.png"})
    [block] = result["content"]
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == png


async def test_image_extension_with_other_content_is_refused(ctx, workspace):
    (workspace / "fake.jpg").write_text("not a jpeg")
    result = await call_tool(ctx, "Read", {"file_path": "fake.jpg"})
    assert result["is_error"] and "not a PNG, JPEG" in result["content"]


async def test_crlf_is_shown_without_carriage_returns(ctx, workspace):
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    assert (await call_tool(ctx, "Read", {"file_path": "win.txt"}))["content"] == "1\tone\n2\ttwo"


async def test_invalid_utf8_is_shown_with_replacement_and_a_note(ctx, workspace):
    (workspace / "latin.txt").write_bytes("caf\xe9 ok\n".encode("latin-1"))
    body = text_of(await call_tool(ctx, "Read", {"file_path": "latin.txt"}))
    assert "1\tcaf\ufffd ok" in body and "not valid UTF-8" in body


async def test_utf16_with_bom_is_decoded(ctx, workspace):
    (workspace / "u16.txt").write_bytes("\ufeffhällo\n".encode("utf-16-le"))
    body = text_of(await call_tool(ctx, "Read", {"file_path": "u16.txt"}))
    assert body.startswith("1\thällo") and "utf-16-le" in body


async def test_read_is_recorded_whole_or_partial(ctx, workspace):
    (workspace / "r.txt").write_text("a\nb\nc\n")
    await call_tool(ctx, "Read", {"file_path": "r.txt", "limit": 2})
    record = ctx.read_file_state[str(workspace / "r.txt")]
    assert record.partial and record.mtime_ns == (workspace / "r.txt").stat().st_mtime_ns
    await call_tool(ctx, "Read", {"file_path": "r.txt", "offset": 3})
    assert not ctx.read_file_state[str(workspace / "r.txt")].partial  # the pages add up to the whole
