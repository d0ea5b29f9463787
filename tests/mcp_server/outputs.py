"""A notebook whose cells carry outputs as a kernel left them in the file: a huge log, an
image, a secret, markup, an error (for the tests of outputs by reference)."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import nbformat

#: An Anthropic-shaped key in an output: never returned to an outside agent.
SECRET = "sk-ant-api03-" + "Zq7" * 14
#: Lines of the huge log (40 characters each with its newline: 72,000 characters, within what
#: the page carries of one output in a live read, 100,000 characters of its JSON)
LOG_LINES = 1_800


def png_1x1() -> str:
    """A real 1x1 PNG, base64: an image any decoder reads."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


PNG = png_1x1()


def log_text() -> str:
    return "".join(f"log line {i:05d} {'.' * 24}\n" for i in range(LOG_LINES))


def write_outputs_notebook(path: Path, first: list[str]) -> Path:
    """Cells ``first`` (ids c0, c1...: e.g. %load_ext), then ``log`` (the huge log), ``img``
    (an image with its text), ``sec`` (a secret printed, and HTML), ``err`` (an error)."""
    v4 = nbformat.v4
    cells = []
    for i, source in enumerate(first):
        cell = v4.new_code_cell(source)
        cell.id = f"c{i}"
        cells.append(cell)
    log = v4.new_code_cell("for i in range(1800): print(...)", outputs=[v4.new_output("stream", name="stdout",
                                                                                      text=log_text())])
    img = v4.new_code_cell("plot()", outputs=[v4.new_output("display_data", data={
        "image/png": PNG, "text/plain": "<Figure size 1x1 with 1 Axes>"})])
    sec = v4.new_code_cell("show()", outputs=[
        v4.new_output("stream", name="stdout", text=f"the key is {SECRET}\nok\n"),
        v4.new_output("execute_result", execution_count=3, data={
            "text/html": "<b>bold</b><script>window.__pwned = 1</script>", "text/plain": "Bold()"})])
    err = v4.new_code_cell("1 / 0", outputs=[v4.new_output("error", ename="ZeroDivisionError",
                                                           evalue="division by zero",
                                                           traceback=["\x1b[31mTraceback\x1b[0m", "1 / 0"])])
    for cell, name in ((log, "log"), (img, "img"), (sec, "sec"), (err, "err")):
        cell.id = name
        cells.append(cell)
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path
