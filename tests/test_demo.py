"""The README's main job: the offline demo tells the truth about what happened."""

from __future__ import annotations

import json

from jupyter_agent.demo import main


def test_demo_edits_and_runs_the_notebook_it_talks_about(tmp_path, capsys, monkeypatch):
    for var in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), "--yes"]) == 0
    cells = json.loads((workspace / "analysis.ipynb").read_text())["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code"]
    new = cells[2]
    # the replayed model claims the cell printed 111.50; the real kernel must agree
    assert "".join(new["outputs"][0]["text"]) == "average sale: 111.50\n"
    out = capsys.readouterr()
    assert "446 / 4 = **111.50**" in out.out
    assert "Ended: completed" in out.err and "WARNING" not in out.err
