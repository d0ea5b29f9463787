"""Importing the notebook layer (and with it nbformat and jsonschema) does not build the
RFC 3987 grammar, and jsonschema's "iri" checker still works: it builds it on first use
(docs/design.md, "Kernel start and nbformat")."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import jupyter_agent.notebook, nbformat, jsonschema
assert 'jsonschema._format' in sys.modules
import inspect
inspect.getmodule(sys._getframe())  # walks sys.modules, as a traceback's formatting does
assert 'lark' not in sys.modules and 'rfc3987_syntax.syntax_helpers' not in sys.modules, 'grammar built at import'
checker = jsonschema.FormatChecker()
assert 'iri' in checker.checkers
assert checker.conforms('https://example.com/caf\\u00e9?q=1', 'iri')
assert not checker.conforms('https://exa mple.com/', 'iri')
assert 'lark' in sys.modules  # built on first use
nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')]))
print('ok')
"""


def test_the_iri_grammar_is_built_on_first_use_not_at_import():
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
