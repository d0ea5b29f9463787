# What nbformat/v4/__init__.py holds, whole: its names come from its modules (nbbase.pyi beside
# this for the builders, which nbformat leaves untyped; the others are nbformat's own).

from .convert import downgrade as downgrade
from .convert import upgrade as upgrade
from .nbbase import nbformat as nbformat
from .nbbase import nbformat_minor as nbformat_minor
from .nbbase import nbformat_schema as nbformat_schema
from .nbbase import new_code_cell as new_code_cell
from .nbbase import new_markdown_cell as new_markdown_cell
from .nbbase import new_notebook as new_notebook
from .nbbase import new_output as new_output
from .nbbase import new_raw_cell as new_raw_cell
from .nbbase import output_from_msg as output_from_msg
from .nbjson import reads as reads
from .nbjson import to_notebook as to_notebook
from .nbjson import writes as writes

__all__ = [
    "downgrade",
    "nbformat",
    "nbformat_minor",
    "nbformat_schema",
    "new_code_cell",
    "new_markdown_cell",
    "new_notebook",
    "new_output",
    "new_raw_cell",
    "output_from_msg",
    "reads",
    "to_notebook",
    "upgrade",
    "writes",
]

reads_json = reads
writes_json = writes
to_notebook_json = to_notebook
