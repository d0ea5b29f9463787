"""Real-world-shaped notebooks, written the ways real programs write them.

Each entry is ``name -> file text``. They cover: nbformat 4.5 as JupyterLab saves it
(indent 1, sorted keys, trailing newline), indent 2 with ``\\u`` escapes and no final
newline, one-line compact JSON, Windows line endings, JavaScript-style numbers in
metadata, nbformat 4.4 without ids, nbformat 3 (worksheets, heading cells, pyout/pyerr),
duplicate ids, attachments, widget state, images, errors with ANSI colours, unicode and
raw cells.
"""

from __future__ import annotations

import base64
import json

import nbformat
from nbformat.v4 import (
    new_code_cell,
    new_markdown_cell,
    new_notebook,
    new_output,
    new_raw_cell,
)

PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d7"
                  "63f8ffff3f0005fe02fea7d6a5e90000000049454e44ae426082")).decode()
ANSI_TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[3], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m "
    "\x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]
WIDGET_STATE = {"application/vnd.jupyter.widget-state+json": {
    "state": {"a1b2c3": {"model_name": "IntSliderModel", "model_module": "@jupyter-widgets/controls",
                         "model_module_version": "2.0.0", "state": {"value": 7, "max": 10, "step": 0.5}}},
    "version_major": 2, "version_minor": 0}}


def lab_notebook():
    nb = new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.7"}, "widgets": WIDGET_STATE})
    md = new_markdown_cell("# Analyse 📈\n![plot](attachment:plot.png)\n日本語のテキスト", id="intro")
    md.attachments = {"plot.png": {"image/png": PNG}}
    load = new_code_cell("import math\nprint('loaded', math.pi)", id="load", execution_count=1)
    load.outputs = [new_output("stream", name="stdout", text="loaded 3.141592653589793\n")]
    show = new_code_cell("display(img)\n{'a': 1}", id="show", execution_count=2)
    show.outputs = [new_output("display_data",
                               data={"image/png": PNG, "text/plain": "<IPython.core.display.Image object>"}),
                    new_output("execute_result", data={"text/plain": "{'a': 1}"}, execution_count=2)]
    boom = new_code_cell("1/0", id="boom", execution_count=3)
    boom.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=ANSI_TRACEBACK)]
    raw = new_raw_cell("raw: keep {{ exactly }}", id="raw-1", metadata={"format": "text/x-rst"})
    tail = new_code_cell("", id="empty_cell")
    nb.cells = [md, load, show, boom, raw, tail]
    return nb


def corpus() -> dict[str, str]:
    nb = lab_notebook()
    lab = nbformat.writes(nb) + "\n"
    as_dict = json.loads(lab)
    indent2 = json.dumps({k: as_dict[k] for k in ("nbformat", "nbformat_minor", "metadata", "cells")},
                         indent=2, ensure_ascii=True)
    compact = json.dumps(as_dict, separators=(",", ":"), ensure_ascii=False)
    windows = lab.replace("\n", "\r\n")
    js_numbers = lab.replace('"step": 0.5', '"step": 5e-1').replace('"value": 7', '"value": 7.0')
    v44 = json.loads(lab)
    v44["nbformat_minor"] = 4
    for cell in v44["cells"]:
        cell.pop("id")
        cell.pop("attachments", None)
    duplicate = json.loads(lab)
    duplicate["cells"][2]["id"] = duplicate["cells"][1]["id"]
    return {
        "lab_v45": lab,
        "indent2_ascii_no_newline": indent2,
        "compact": compact,
        "windows_crlf": windows,
        "js_numbers": js_numbers,
        "v44_no_ids": nbformat.writes(nbformat.from_dict(v44)) + "\n",
        "v3_worksheets": json.dumps(V3, indent=1),
        "duplicate_ids": json.dumps(duplicate, indent=1, ensure_ascii=False) + "\n",
    }


V3 = {
    "metadata": {"name": "", "signature": "sha256:0"},
    "nbformat": 3, "nbformat_minor": 0,
    "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": "Old notebook"},
        {"cell_type": "markdown", "metadata": {}, "source": ["Some *text* \u00e9\n", "more"]},
        {"cell_type": "code", "collapsed": False, "input": ["x = 6 * 7\n", "x"], "language": "python",
         "metadata": {}, "prompt_number": 1,
         "outputs": [{"metadata": {}, "output_type": "pyout", "prompt_number": 1, "text": ["42"]}]},
        {"cell_type": "code", "collapsed": False, "input": "1/0", "language": "python", "metadata": {},
         "prompt_number": 2, "outputs": [{"ename": "ZeroDivisionError", "evalue": "integer division",
                                          "output_type": "pyerr", "traceback": ["ZeroDivisionError: x"]}]},
        {"cell_type": "raw", "metadata": {}, "source": "raw text"},
    ]}],
}

#: Cells per corpus notebook (v3 has its own shape).
CELL_COUNT = {name: 5 if name == "v3_worksheets" else 6 for name in corpus()}
