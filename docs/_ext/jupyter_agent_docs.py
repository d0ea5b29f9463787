"""Reference pages generated from the code, so they cannot drift from it.

Two directives for the MyST pages of docs/reference/:

- ``{command-help} NAME`` prints the ``--help`` of one of the package's argparse parsers:
  ``jupyter agent``, ``jupyter agent run``, ``jupyter agent mcp`` (cli.py) and the magics'
  ``%%agent`` and ``%agent`` (jupyter/magic/agent_magic.py), exactly as a user sees them.
- ``{traitlets-config} module.Class`` lists a Configurable's settings (``config=True``
  traits): name, type, default and help, from the traits themselves.

The pages under docs/ link to the repository's SECURITY.md, BENCHMARKS.md and EVALS.md as ``../X.md``
(right on GitHub); in the site those files are included by docs/security.md,
docs/benchmarks.md and docs/evals.md, so such links are pointed there while a page is read.
"""

import argparse
import importlib
import re

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:  # why: argparse keeps its sub-commands only there
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(f"`jupyter agent` has no sub-command {name!r}")


def help_text(name: str) -> str:
    """The ``--help`` text of the command NAME (see the module docstring)."""
    if name in ("%%agent", "%agent"):
        from jupyter_agent.jupyter.magic.agent_magic import cell_parser, line_parser

        return (cell_parser() if name == "%%agent" else line_parser()).format_help()
    from jupyter_agent.cli import build_parser

    words = name.split()
    if words[:2] != ["jupyter", "agent"]:
        raise ValueError(f"unknown command {name!r}: `jupyter agent [SUB]`, `%%agent` or `%agent`")
    parser = build_parser()
    for word in words[2:]:
        parser = _subparser(parser, word)
    return parser.format_help()


class CommandHelp(Directive):
    """``{command-help} jupyter agent run``: the command's ``--help`` as a literal block."""

    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        text = help_text(self.arguments[0]).rstrip()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


class TraitletsConfig(Directive):
    """``{traitlets-config} jupyter_agent.jupyter.kernel.agent_config.AgentConfig``: its settings."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name, _, class_name = self.arguments[0].rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        items = nodes.definition_list()
        for name, trait in sorted(cls.class_traits(config=True).items()):
            term = nodes.term()
            term += nodes.literal(text=f"{class_name}.{name}")
            term += nodes.Text(f" : {type(trait).__name__}")
            body = nodes.definition()
            default = nodes.paragraph()
            default += nodes.Text("Default: ")
            default += nodes.literal(text=trait.default_value_repr())
            body += default
            body += nodes.paragraph(text=trait.help or "(no help)")
            item = nodes.definition_list_item()
            item += term
            item += body
            items += item
        return [items]


#: Repository files outside docs/ and the page of the site that includes each.
INCLUDED = {"SECURITY.md": "security.md", "BENCHMARKS.md": "benchmarks.md", "EVALS.md": "evals.md",
            "README.md": "index.md"}
_OUTSIDE_LINK = re.compile(r"\]\(\.\./(" + "|".join(re.escape(name) for name in INCLUDED) + r")(#[^)]*)?\)")


def point_links_inside(app: Sphinx, docname: str, source: list[str]) -> None:
    """``[x](../SECURITY.md#a)`` in a top-level page becomes ``[x](security.md#a)``."""
    if "/" in docname:
        return
    source[0] = _OUTSIDE_LINK.sub(lambda m: f"]({INCLUDED[m.group(1)]}{m.group(2) or ''})", source[0])


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("command-help", CommandHelp)
    app.add_directive("traitlets-config", TraitletsConfig)
    app.connect("source-read", point_links_inside)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
