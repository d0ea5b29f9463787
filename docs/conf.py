"""Sphinx configuration of the documentation site (docs/, built by tests/test_docs.py).

MyST Markdown pages with the PyData theme, as JupyterLab's and jupyter-ai's sites are. The
reference pages are generated from the code by the local extension ``_ext/jupyter_agent_docs.py``
(the CLI's and the magics' ``--help``, ``AgentConfig``'s traitlets) and by autodoc.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))
# argparse wraps its help to the terminal's width: the same width on every machine.
os.environ["COLUMNS"] = "90"

project = "jupyter-agent"
author = "the jupyter-agent authors"
copyright = "the jupyter-agent authors"  # noqa: A001 - Sphinx's own setting name

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "jupyter_agent_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "README.md", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
# `page.md#a-heading` links, as the pages use them on GitHub too.
myst_heading_anchors = 4

# Broken links and references are errors (the build runs with -W): every reference must resolve.
nitpicky = True
# The API pages document the public names; the types their signatures and docstrings mention
# from the standard library or from inside the package are not pages of their own.
nitpick_ignore_regex = [
    (r"py:.*", r"(typing|collections\.abc|asyncio|pathlib|datetime|enum|types)\..*"),
    (r"py:.*", r"jupyter_agent\..*"),
    (r"py:(class|data)", r"(Model|QueryParams|ConversationBusy|STEP_NAMES)"),
    # The types AgentOptions' fields name (imported for type checkers only, so that making one
    # imports no more of loop/ than loop_options.py: options.py is read by the CLI before it
    # knows what to run).
    (r"py:(class|data)", r"(ProviderSettings|Tool|AnyTool|PermissionPolicy|CanUseTool|Hooks)"),
    # The wire's type aliases and TypedDicts, as signatures name them (loop/wire.py, documented whole).
    (r"py:(class|data)", r"(JSONObject|ContentBlock|ToolResultContent|ToolOutputContent|MessageSnapshot|Message|Role|"
                         r"\w+Block|CacheControl|ToolDefinition|ThinkingConfig|UsageRecord|LoopEvent|NextStep|"
                         r"TypeGuard|NotRequired)"),
    (r"py:.*", r"(Any|Callable|Awaitable|AsyncIterator|Iterator|Iterable|Mapping|Sequence|Literal|Path|"
               r"Optional|Union|TextIO|datetime|Enum|NoneType|dict|list|str|int|float|bool|tuple|object)"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"

html_theme = "pydata_sphinx_theme"
html_title = "jupyter-agent"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
