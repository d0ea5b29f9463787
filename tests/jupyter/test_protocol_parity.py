"""The comm protocols are defined twice, once per language: ``jupyter_agent/jupyter/bridge/comm_protocol.py``
and ``labextension/src/protocol.ts``. This test reads the TypeScript file and fails when a
constant differs, or exists on one side only, so neither side can change alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jupyter_agent.jupyter.bridge import comm_protocol as protocol
from jupyter_agent.jupyter.bridge.comm_protocol import BridgeCode

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "protocol.ts"

_CONST = re.compile(r"^export const (\w+)\s*(?::[^=]+)?=\s*(.*?)(?:\s+as const)?;\s*$", re.MULTILINE | re.DOTALL)


def _js_literal(text: str) -> object:
    """A literal of protocol.ts (string, number, array or object of those) as JSON reads it."""
    # 'x' -> "x": its escapes (\n, \u...) are JSON's too, all but \' (and a " needs one)
    text = re.sub(r"'((?:[^'\\]|\\.)*)'",
                  lambda m: '"' + re.sub(r'(?<!\\)"', r'\\"', m.group(1).replace("\\'", "'")) + '"', text)
    text = re.sub(r"([{,]\s*)([A-Za-z_]\w*)\s*:", r'\1"\2":', text)  # key: -> "key":
    text = re.sub(r",(\s*[\]}])", r"\1", text)  # trailing commas
    return json.loads(text)


def typescript_constants() -> dict[str, object]:
    source = PROTOCOL_TS.read_text(encoding="utf-8")
    found = {}
    for name, value in _CONST.findall(source):
        if name.isupper() or "_" in name and name.upper() == name:
            found[name] = _js_literal(value)
    return found


def python_constants() -> dict[str, object]:
    found = {}
    for name, value in vars(protocol).items():
        if name.upper() == name and not name.startswith("_") and isinstance(value, (str, int, tuple, dict)):
            found[name] = list(value) if isinstance(value, tuple) else value
    return found


def test_typescript_constants_are_read():
    ts = typescript_constants()
    assert {"BRIDGE_TARGET", "BRIDGE_VERSION", "BRIDGE_OPS", "PANEL_TARGET", "PANEL_VERSION"} <= ts.keys()
    assert ts["BRIDGE_PAGE_CODES"]["badRequest"] == "bad_request"


def test_every_constant_is_the_same_on_both_sides():
    ts, py = typescript_constants(), python_constants()
    assert sorted(ts) == sorted(py), "a constant is defined on one side only"
    for name in ts:
        assert ts[name] == py[name], f"{name} differs: protocol.ts {ts[name]!r}, protocol.py {py[name]!r}"


def test_the_page_codes_are_the_kernels_codes_but_two():
    assert set(protocol.BRIDGE_PAGE_CODES.values()) | {"gone", "no_answer"} == {c.value for c in BridgeCode}


@pytest.mark.parametrize("literal, value", [
    ("'a.b'", "a.b"), ("4194304", 4194304), ("['x', 'y'] ", ["x", "y"]), ("'\\ue000'", "\ue000"),
    ("'it\\'s \"x\"'", 'it\'s "x"'),
    ("{\n  badRequest: 'bad_request',\n  failed: 'failed'\n}", {"badRequest": "bad_request", "failed": "failed"}),
])
def test_the_literal_reader(literal, value):
    assert _js_literal(literal) == value
