"""Read: numbered lines, paging, images, binaries, encodings, and what it records."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import call_tool, text_of
from .test_tools_through_loop import results_sent, run_script


def tiny_png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG of one colour (built by hand: no imaging library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress((b"\x00" + b"\xff\x00\x00" * width) * height)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


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
    [line, block] = result["content"]
    assert line == {"type": "text", "text": f"dot.png: PNG, 1×1 px, {len(png)} bytes"}
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == png


def _jpeg(width: int, height: int) -> bytes:
    """A JPEG's header as an encoder writes it: SOI, a JFIF APP0 segment, then a baseline SOF0."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def _webp(chunk: bytes, body: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(body)) + b"WEBP" + chunk + struct.pack("<I", len(body)) + body


async def test_an_image_read_says_its_format_pixel_size_and_bytes(ctx, workspace):
    vp8l_bits = (1200 - 1) | ((800 - 1) << 14)
    images = {
        "monthly.png": (tiny_png(1200, 800), "PNG"),
        "anim.gif": (b"GIF89a" + struct.pack("<HH", 1200, 800) + b"\x00\x00\x00;", "GIF"),
        "photo.jpg": (_jpeg(1200, 800), "JPEG"),
        "lossy.webp": (_webp(b"VP8 ", b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", 1200, 800)), "WebP"),
        "lossless.webp": (_webp(b"VP8L", b"\x2f" + struct.pack("<I", vp8l_bits)), "WebP"),
        "extended.webp": (_webp(b"VP8X", b"\x00" * 4 + (1199).to_bytes(3, "little") + (799).to_bytes(3, "little")),
                          "WebP"),
        "big.png": (tiny_png(1200, 800) + b"\x00" * 70_000, "PNG"),
    }
    for name, (data, kind) in images.items():
        (workspace / name).write_bytes(data)
        result = await call_tool(ctx, "Read", {"file_path": name})
        [line, block] = result["content"]
        size = f"{len(data)} bytes" if len(data) < 1024 else f"{round(len(data) / 1024)} KB"
        assert line["text"] == f"{name}: {kind}, 1200×800 px, {size}"
        assert base64.b64decode(block["source"]["data"]) == data
    (workspace / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # the header ends too soon
    result = await call_tool(ctx, "Read", {"file_path": "cut.png"})
    assert result["content"][0]["text"] == "cut.png: PNG, size unknown, 10 bytes"


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


# --- PDF (issue 7.9) -------------------------------------------------------------------------

def make_pdf(pages: int, padding: int = 0) -> bytes:
    """A real PDF written by pypdf: page i is (100 + i) points wide, so a test can tell
    which pages a cut-out PDF holds. ``padding`` characters of metadata make it bigger."""
    import io

    import pypdf

    writer = pypdf.PdfWriter()
    for i in range(pages):
        writer.add_blank_page(width=100 + i, height=200)
    if padding:
        writer.add_metadata({"/Padding": "p" * padding})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def page_widths(pdf: bytes) -> list[int]:
    import io

    import pypdf

    return [int(page.mediabox.width) for page in pypdf.PdfReader(io.BytesIO(pdf)).pages]


def document_of(result) -> bytes:
    docs = [b for b in result["content"] if b.get("type") == "document"]
    assert len(docs) == 1, result
    assert docs[0]["source"]["type"] == "base64" and docs[0]["source"]["media_type"] == "application/pdf"
    return base64.b64decode(docs[0]["source"]["data"])


async def test_a_pdf_comes_back_whole_as_a_document_block(ctx, workspace):
    data = make_pdf(3)
    (workspace / "report.pdf").write_bytes(data)
    result = await call_tool(ctx, "Read", {"file_path": "report.pdf"})
    assert not result.get("is_error"), result
    assert document_of(result) == data  # the file exactly as it is on disk
    assert text_of(result).startswith("PDF file: report.pdf, 3 pages (")
    assert str(workspace / "report.pdf") in ctx.read_file_state


async def test_pages_cut_out_just_those_pages(ctx, workspace):
    (workspace / "long.pdf").write_bytes(make_pdf(30))
    result = await call_tool(ctx, "Read", {"file_path": "long.pdf", "pages": "2-4"})
    assert page_widths(document_of(result)) == [101, 102, 103]
    assert text_of(result).startswith("PDF file: long.pdf, pages 2-4 of 30 (")
    result = await call_tool(ctx, "Read", {"file_path": "long.pdf", "pages": "7"})
    assert page_widths(document_of(result)) == [106]
    result = await call_tool(ctx, "Read", {"file_path": "long.pdf", "pages": "1-2, 29-"})
    assert page_widths(document_of(result)) == [100, 101, 128, 129]
    assert "pages 1-2, 29-30 of 30" in text_of(result)


@pytest.mark.parametrize("pages, words", [
    (None, ['has 30 pages', 'pages: "1-20"']),
    ("1-21", ["21 pages", "at most 20"]),
    ("two", ["not a page range", '"1-5"']),
    ("31", ["30 page(s)", "past the end"]),
    ("0-2", ["numbered from 1"]),
    ("5-3", ["lower page"]),
])
async def test_bad_or_too_large_page_requests_say_what_to_do(ctx, workspace, pages, words):
    (workspace / "long.pdf").write_bytes(make_pdf(30))
    args = {"file_path": "long.pdf"} if pages is None else {"file_path": "long.pdf", "pages": pages}
    result = await call_tool(ctx, "Read", args)
    assert result["is_error"], result
    for word in words:
        assert word in result["content"], result["content"]


async def test_too_many_bytes_ask_for_fewer_pages(ctx, workspace, monkeypatch):
    from jupyter_agent.tools import pdf

    monkeypatch.setattr(pdf, "MAX_PDF_BYTES", 2_000)
    (workspace / "fat.pdf").write_bytes(make_pdf(2, padding=5_000))
    result = await call_tool(ctx, "Read", {"file_path": "fat.pdf"})
    assert result["is_error"] and "`pages`" in result["content"]


async def test_pages_is_for_pdfs_only_and_a_fake_pdf_is_refused(ctx, workspace):
    (workspace / "a.txt").write_text("text\n")
    result = await call_tool(ctx, "Read", {"file_path": "a.txt", "pages": "1"})
    assert result["is_error"] and "PDF files only" in result["content"] and "offset and limit" in result["content"]
    (workspace / "fake.pdf").write_text("not really\n")
    result = await call_tool(ctx, "Read", {"file_path": "fake.pdf"})
    assert result["is_error"] and "not a PDF" in result["content"]
    (workspace / "broken.pdf").write_bytes(b"%PDF-1.7\n garbage")
    result = await call_tool(ctx, "Read", {"file_path": "broken.pdf"})
    assert result["is_error"] and "could not be read as a PDF" in result["content"]


async def test_read_schema_has_claude_codes_pages_field(ctx):
    from jupyter_agent.tools import default_tools

    schema = next(t for t in default_tools() if t.name == "Read").to_api()["input_schema"]
    assert schema["properties"]["pages"]["type"] == "string"
    assert "PDF" in schema["properties"]["pages"]["description"]
    assert schema["required"] == ["file_path"]


async def test_a_pdf_read_reaches_the_model_through_the_loop_and_shows_as_one_line(workspace):
    """Through the fake Messages API: the document block is in the next request's
    tool_result (the fake API, like the real one, accepts it there), a PDF larger than
    the per-message text budget is not left out, and the transcript shows a line, not base64."""
    from jupyter_agent import query
    from jupyter_agent.view.transcript import result_parts
    from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

    data = make_pdf(3, padding=300_000)  # base64 of it is over the 200,000-character budget
    (workspace / "paper.pdf").write_bytes(data)
    read = tool_use("Read", {"file_path": "paper.pdf"})
    with FakeMessagesAPI([response(read), response(text("It is about padding."))]) as api:
        run = query("summarise paper.pdf", model=api.model(), cwd=workspace)
        terminal = await run.wait()
        sent = api.requests[1].body["messages"][-1]["content"]
        assert api.rejections == []
    assert terminal.reason == "completed"
    result = next(b for b in sent if b.get("type") == "tool_result")
    assert document_of(result) == data
    parts = result_parts(result["content"])
    assert parts[0] == ("text", f"PDF file: paper.pdf, 3 pages ({len(data) / 1024:,.1f} KB)")
    assert parts[1][1].startswith("[document: application/pdf, ") and len(parts[1][1]) < 60


async def test_an_image_read_through_the_loop_sends_its_line_then_the_image(workspace):
    png = tiny_png(120, 80)
    (workspace / "monthly.png").write_bytes(png)
    read = tool_use("Read", {"file_path": str(workspace / "monthly.png")})
    with FakeMessagesAPI([response(read), response(text("a chart"))]) as api:
        await run_script(api, "look", workspace)
    [line, image] = results_sent(api, 1)[read["id"]]["content"]
    assert line == {"type": "text", "text": f"monthly.png: PNG, 120×80 px, {len(png)} bytes"}
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
