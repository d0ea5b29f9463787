"""Rich outputs as what they mean to the model (``notebook/rich.py``): a DataFrame as a
compact text table, other HTML as its text, widgets as their text, long outputs as their
start and end with a note."""

from __future__ import annotations

import pandas as pd

from jupyter_agent.notebook.cells import cell_view
from jupyter_agent.notebook.render import MAX_CELL_OUTPUT_CHARS, render_run
from jupyter_agent.notebook.rich import meaning_text


def _bundle(frame: pd.DataFrame) -> dict[str, str]:
    return {"text/html": frame._repr_html_(), "text/plain": repr(frame)}


def test_a_dataframe_is_its_shape_columns_and_first_rows():
    frame = pd.DataFrame({"id": range(1000), "name": ["a b"] * 1000, "score": [0.5] * 1000})
    table = meaning_text(_bundle(frame))
    assert table is not None
    lines = table.splitlines()
    assert lines[:3] == ["DataFrame: 1,000 rows × 3 columns", "columns: id, name, score", "rows shown (of 1,000):"]
    assert lines[3].split() == ["id", "name", "score"] and lines[4].split() == ["0", "0", "a", "b", "0.5"]
    assert lines[-1].split() == ["999", "999", "a", "b", "0.5"] and "<" not in table and len(table) < 1_000


def test_a_wide_frame_keeps_every_column_its_html_shows_and_names_the_index():
    frame = pd.DataFrame([[i * 30 + j for j in range(30)] for i in range(3)],
                         columns=[f"feature_{j}" for j in range(30)]).rename_axis("row")
    table = meaning_text(_bundle(frame))
    assert table is not None and "DataFrame: 3 rows × 30 columns" in table
    assert "feature_29" in table.splitlines()[1] and table.splitlines()[2].split()[0] == "row"
    assert "\\" not in table  # the text repr wraps a wide frame into blocks; this does not


def test_column_types_come_from_the_table_schema_when_it_is_there():
    frame = pd.DataFrame({"n": [1, 2], "when": pd.to_datetime(["2024-01-01", "2024-02-01"])})
    with pd.option_context("display.html.table_schema", True):  # (what a user may turn on)
        bundle = {**_bundle(frame), "application/vnd.dataresource+json": frame._repr_data_resource_()}
    assert "columns: n (integer), when (datetime)" in str(meaning_text(bundle))


def test_html_alone_is_its_text_and_a_plain_repr_wins_over_other_html():
    assert meaning_text({"text/html": "<table><tr><th>k</th><th>v</th></tr><tr><td>x</td><td>1</td></tr>"
                                      "</table>"}) == "Table: 1 row × 2 columns\ncolumns: k, v\nk  v\nx  1"
    html = "<h3>Report</h3><script>steal()</script><style>p{}</style><p>all &amp; fine</p>"
    shown = meaning_text({"text/html": html})
    assert shown == "Report\nall & fine"
    assert meaning_text({"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "<Thing>"}) == "<Thing>"


def test_a_widget_is_its_text():
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    assert meaning_text({"application/vnd.jupyter.widget-view+json": view,
                         "text/plain": "IntSlider(value=3)"}) == "IntSlider(value=3)"
    assert meaning_text({"application/vnd.jupyter.widget-view+json": view}) == \
        "[an interactive widget with no text form]"


def test_a_long_output_keeps_its_start_and_end_with_a_note():
    lines = [f"step {i}" for i in range(20_000)] + ["Traceback: the last line matters"]
    printed = "\n".join(lines)
    outputs = [{"output_type": "stream", "name": "stdout", "text": printed}]
    content = render_run(cell_view({"id": "c0", "cell_type": "code", "source": "run()"}, 0, True), outputs, 1, "ok")
    assert isinstance(content, str) and len(content) < MAX_CELL_OUTPUT_CHARS + 1_000
    assert content.startswith("Ran cell c0 [1].\nstep 0\nstep 1\n")
    assert content.rstrip().splitlines()[-2] == "Traceback: the last line matters"
    assert "lines) cut from the middle of this output ...]" in content
    assert f"Outputs of cell c0 had {len(printed):,} characters of text; the middle was cut" in content
