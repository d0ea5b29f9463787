"""The transcripts packaged with jupyter-agent (``replay/transcripts/``), found by name.

Light on purpose: the environment and the launchers resolve ``--replay demo`` without
starting a server or importing ``anthropic``.
"""

from __future__ import annotations

import os
from pathlib import Path

TRANSCRIPTS_DIR = Path(__file__).parent / "transcripts"
DEMO_TRANSCRIPT = TRANSCRIPTS_DIR / "demo_read_edit.json"
#: What a replay plays for a Fix with agent / Explain click (the request says which), unless
#: its own transcript says it answers that request (``"answers": "fix"``).
ERROR_HELP_TRANSCRIPTS = {"fix": TRANSCRIPTS_DIR / "fix_error.json",
                          "explain": TRANSCRIPTS_DIR / "explain_error.json"}


def resolve_transcript(name: str | os.PathLike[str]) -> str:
    """A replay transcript path: a file, or the name of a packaged one (``demo``)."""
    path = Path(name).expanduser()
    if path.is_file():
        return str(path.resolve())
    for candidate in (TRANSCRIPTS_DIR / str(name), TRANSCRIPTS_DIR / f"{name}.json",
                      DEMO_TRANSCRIPT if str(name) == "demo" else None):
        if candidate is not None and candidate.is_file():
            return str(candidate)
    raise FileNotFoundError(f"no such transcript: {name} (a .json file, or 'demo')")
