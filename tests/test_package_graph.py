"""The package graph: which part of ``jupyter_agent`` may import which, with no cycles.

Imports are read with ``ast`` from every module, including imports inside functions and
under ``if TYPE_CHECKING:`` (a deferred import is still a dependency). Imports made from
strings (``importlib.import_module``) are not seen; only the package root does that, and
only for its own modules.

A *unit* is a subpackage (``loop``, ``tools``, ...) or a top-level module (``agent``,
``cli``, ...). The rule, lowest first:

- ``errors`` (the root of the exceptions, and the ``Busy`` and ``Refused`` families) imports
  nothing of ours, and every part may import it;
- ``loop``, ``prompts``, ``redact`` and ``changes`` (what a run changed, and what undoing it
  did: plain data) import nothing of ours but ``errors``; ``render`` (how untrusted text
  reaches a screen: HTML, Markdown, terminal, invisible characters) imports only ``redact``;
- ``model`` imports ``loop``; ``replay`` (the fake Messages API and ``ReplayModel``, product
  code: the offline demo runs on it) imports ``model`` (and ``prompts``, to read what the request
  told the model; ``render``, through which the relay's command line prints a request); ``files``
  (atomic writes, what is at a path) imports ``loop``; ``notebook`` imports ``loop`` (and ``files``,
  ``redact``); ``tools`` imports those and ``notebook`` (the notebook tools and Read/Edit of a ``.ipynb`` work on
  ``NotebookDocument``; and ``changes``, whose records the tools fill); ``safety`` and
  ``permissions`` import ``loop`` and ``tools``
  (rules read a call's paths the way the tools resolve them: ``tools/paths.py``), and
  ``permissions`` imports ``safety``; ``policy`` (an administrator's limits on runs)
  imports ``loop`` (and ``model``, for the provider names it may pin), and ``permissions``
  imports it; ``mcp`` (MCP servers' tools) imports
  ``loop``, ``redact`` and ``notebook`` (whose ``deferred_grammar`` keeps the SDK's jsonschema from building a grammar).
  Never the reverse: that would be a cycle;
- ``environment`` (what a run is given from outside: ``$JUPYTER_AGENT_REPLAY``, the API
  key check, replay files, typed counts) imports ``model``, ``replay`` and ``policy`` (a
  pinned provider decides which credentials a run needs);
- ``options`` (``AgentOptions``: a run's options, declared once) imports ``loop`` and ``model``
  (for types alone);
- ``agent`` (``query()``, the wiring) imports those; ``conversation`` imports them and ``agent``;
- ``view`` (the ``RunModel`` view model, the labels, the static transcript: what every
  display of a run is drawn from, no widget stack) imports ``loop``, ``model`` (prices),
  ``redact``, ``render`` and ``changes``;
- ``mcp_server`` (jupyter-agent as an MCP server for outside agents: the tools' shapes, the
  HTTP endpoint, the way to a notebook's kernel, the stdio forwarder; what a call does
  happens in the kernel, in ``jupyter``) imports only ``redact``; ``jupyter`` takes the
  kernel's side of its protocol from it, ``cli`` its stdio command;
- ``terminal_approvals`` (the command line's approvals: an ask printed whole and answered on
  the terminal, or denied without one) imports the wiring's units and ``render``; ``cli``
  imports it;
- ``jupyter`` and ``cli`` (the fronts) import anything below, ``view`` included, not each other;
  inside ``jupyter``, its rooms run one way too (``JUPYTER_ROOMS``): ``bridge`` (the way to the
  page and to the kernel itself) and ``widgets`` (the run handle and what it displays) import no
  other room; ``persistence`` imports ``bridge``; ``kernel`` (the ``AgentSession``, its config)
  imports those three; ``outside`` (an outside agent's calls) imports those four; ``panel``
  those five; ``magic`` (``%load_ext``, which starts and stops the others) any room;
- entry points (``demo``, ``launch``, ``server_extension``), the ``lessons`` and the
  package root (the public API) import those; ``testing`` imports anything. Only
  ``lessons`` (offline, against the fake API) imports ``testing``.
"""

from __future__ import annotations

import ast
import pathlib
from collections import defaultdict

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "jupyter_agent"
ROOT = "jupyter_agent"

_MIDDLE = {"loop", "prompts", "redact", "model", "replay", "files", "notebook", "tools", "safety",
           "permissions", "environment", "changes", "policy", "mcp", "options"}
_WIRING = _MIDDLE | {"agent", "conversation"}
_SHARED = _WIRING | {"view", "render", "mcp_server"}  # what both fronts build on
_FRONTS = _SHARED | {"jupyter", "cli", "terminal_approvals"}
#: unit -> the units it may import (besides itself). ``redact``, ``safety``, ``lessons``,
#: ``launch`` and ``server_extension`` are being added on other branches as this is written.
ALLOWED: dict[str, set[str]] = {
    "loop": set(),
    "prompts": set(),
    "redact": set(),
    "render": {"redact"},
    "model": {"loop"},
    "replay": {"loop", "model", "prompts", "render"},
    "files": {"loop"},
    "notebook": {"loop", "files", "redact"},
    "changes": set(),
    "tools": {"loop", "files", "notebook", "redact", "changes"},
    "safety": {"loop", "tools"},
    "policy": {"loop", "model"},
    "permissions": {"loop", "tools", "safety", "policy"},
    "mcp": {"loop", "redact", "notebook"},
    "environment": {"model", "replay", "policy"},
    "options": {"loop", "model"},
    "agent": _MIDDLE,
    "conversation": _MIDDLE | {"agent"},
    "view": {"loop", "model", "redact", "render", "changes"},
    "mcp_server": {"redact"},
    "jupyter": _SHARED,
    "terminal_approvals": _WIRING | {"render"},
    "cli": _SHARED | {"terminal_approvals"},
    "server_extension": _FRONTS,
    "demo": _FRONTS,
    "launch": _FRONTS | {"demo"},
    "lessons": _FRONTS | {"testing"},
    "testing": _FRONTS | {"demo", ROOT},
    ROOT: _FRONTS,
    "errors": set(),
}
# ``errors`` (the exceptions' root and their Busy and Refused families) imports nothing of
# ours, and every part may raise them.
for _unit, _allowed in ALLOWED.items():
    if _unit != "errors":
        _allowed.add("errors")

#: jupyter/'s rooms -> the rooms each may import (besides itself); ``jupyter`` is what sits
#: directly in it: the package ``__init__`` (a docstring) and the re-exports in ``SHIMS``.
JUPYTER_ROOMS: dict[str, set[str]] = {
    "jupyter": {"kernel"},
    "bridge": set(),
    "widgets": set(),
    "persistence": {"bridge"},
    "kernel": {"bridge", "widgets", "persistence"},
    "outside": {"bridge", "widgets", "persistence", "kernel"},
    "panel": {"bridge", "widgets", "persistence", "kernel", "outside"},
    "magic": {"bridge", "widgets", "persistence", "kernel", "outside", "panel"},
}

#: Modules directly in jupyter/ that only re-export a room's names from their old place (the
#: public contract: ``AgentConfig``).
SHIMS = {f"{ROOT}.jupyter.config"}

#: Imports that break the rule today, as (importer, imported) modules. The test fails on
#: any import that breaks the rule and is not listed, and on any listed one that is gone
#: (then delete its line), so this list always says what is left to do.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_edges() -> set[tuple[str, str]]:
    """(importer, imported) for every import of one of our modules, anywhere in a file."""
    known = modules()
    edges = set()
    for name, (path, is_package) in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            else:
                continue
            edges |= {(name, t) for t in targets if t.split(".")[0] == ROOT and t != name}
    return edges


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def room(module: str) -> str | None:
    """The room of jupyter/ a module is in (``jupyter`` for the package itself), or None."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] != "jupyter":
        return None
    return parts[2] if len(parts) > 2 and module not in SHIMS else "jupyter"


def violations(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    between_units = {(a, b) for a, b in edges
                     if unit(a) != unit(b) and unit(b) not in ALLOWED.get(unit(a), set())}
    between_rooms = {(a, b) for a, b in edges
                     if (ra := room(a)) and (rb := room(b)) and ra != rb
                     and rb not in JUPYTER_ROOMS.get(ra, set())}
    return between_units | between_rooms


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (as a path that comes back to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def graph_of(edges, key=lambda m: m) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        if key(a) != key(b):
            graph[key(a)].add(key(b))
    return graph


def test_every_unit_has_a_rule():
    units = {unit(m) for m in modules()}
    assert units - ALLOWED.keys() == set(), "a new part of the package: say in ALLOWED what it may import"
    assert find_cycle(ALLOWED) is None  # the rule itself runs one way


def test_every_jupyter_module_is_in_a_room():
    """jupyter/ holds rooms only: a module directly in it has no rule saying what it may import."""
    loose = [m for m, (_, is_package) in modules().items()
             if m.startswith(f"{ROOT}.jupyter.") and m.count(".") == 2 and not is_package and m not in SHIMS]
    assert loose == [], "put these in a room of jupyter/: " + ", ".join(loose)
    rooms = {room(m) for m in modules()} - {None}
    assert rooms - JUPYTER_ROOMS.keys() == set(), "a new room of jupyter/: say in JUPYTER_ROOMS what it may import"
    assert find_cycle(JUPYTER_ROOMS) is None
    for shim in SHIMS:  # a re-export holds no code of its own
        tree = ast.parse(modules()[shim][0].read_text())
        assert all(isinstance(node, ast.Expr | ast.ImportFrom | ast.Assign) for node in tree.body), shim


def test_imports_follow_the_package_graph():
    new = violations(import_edges()) - KNOWN_VIOLATIONS
    assert not new, (
        "imports against the package graph (see this file's docstring): "
        + ", ".join(f"{a} -> {b}" for a, b in sorted(new)))


def test_known_violations_are_still_there():
    """A fixed violation must leave the list, so the list stays true."""
    gone = KNOWN_VIOLATIONS - violations(import_edges())
    assert not gone, "no longer violated, delete from KNOWN_VIOLATIONS: " + ", ".join(
        f"{a} -> {b}" for a, b in sorted(gone))


def test_no_cycles_between_units_or_modules():
    edges = import_edges() - KNOWN_VIOLATIONS
    rooms = {(a, b) for a, b in edges if room(a) and room(b)}
    # units, jupyter/'s rooms, modules (e.g. loop/query.py <-> run.py)
    for graph in (graph_of(edges, unit), graph_of(rooms, room), graph_of(edges)):
        cycle = find_cycle(graph)
        assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_reader_sees_deferred_imports_and_the_rules_bite():
    """The checks above can fail: function-level imports are read, and an upward
    import or a cycle is caught."""
    edges = import_edges()
    # agent.query() imports Permissions and default_tools inside the function.
    assert ("jupyter_agent.agent", "jupyter_agent.permissions") in edges
    assert ("jupyter_agent.agent", "jupyter_agent.tools") in edges
    assert ("jupyter_agent.loop.run", "jupyter_agent.loop.query") in edges
    upward = {("jupyter_agent.loop.state", "jupyter_agent.jupyter.magic.agent_magic"),
              ("jupyter_agent.tools.read", "jupyter_agent.permissions")}
    assert violations(upward) == upward
    # jupyter/'s rooms: the bridge may not reach up into the session, the magic may use it.
    assert violations({("jupyter_agent.jupyter.bridge.live_notebook", "jupyter_agent.jupyter.kernel.agent_session")})
    assert not violations({("jupyter_agent.jupyter.magic.agent_magic", "jupyter_agent.jupyter.bridge.kernel_bridge")})
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
