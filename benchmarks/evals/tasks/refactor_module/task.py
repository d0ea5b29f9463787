"""Move copied cleaning code into a module, with the results unchanged (one copy differs a little)."""

import tempfile
from pathlib import Path

from benchmarks.evals.checks import execute, sources, write_notebook

NOTEBOOK = "shops.ipynb"
PROMPT = ("shops.ipynb cleans three shops' exports with the same code pasted three times. Move the cleaning "
          "into a function in a module cleaning.py next to the notebook and use it from the notebook, so "
          "the code is written once. The results must stay exactly the same.")

ROWS = {
    "a": "Date , Amount ,Item Name\n03/01/2025,\"1,200\",desk\n04/01/2025,35, lamp\n05/01/2025,-5,refund\n"
         "07/02/2025,n/a,chair\n09/02/2025,\"2,050.50\",sofa\n",
    "b": "DATE,AMOUNT, Item Name\n11/01/2025, 80 ,mug\n11/01/2025, 80 ,mug\n02/02/2025,\"1,000\",table\n"
         "15/03/2025,0,sample\n",
    "c": " Date,Amount,Item name\n01/03/2025,15,pen\n01/03/2025,15,pen\n20/03/2025,\"3,300\",bike\n"
         "21/03/2025,abc,typo\n",
}


def clean_cell(name: str, extra: str = "") -> str:
    return (f"{name} = pd.read_csv('shop_{name}.csv')\n"
            f"{name}.columns = [c.strip().lower().replace(' ', '_') for c in {name}.columns]\n"
            f"{name}['amount'] = pd.to_numeric({name}['amount'].astype(str).str.replace(',', '').str.strip(), "
            f"errors='coerce')\n"
            f"{name} = {name}.dropna(subset=['amount'])\n"
            f"{name}['date'] = pd.to_datetime({name}['date'], format='%d/%m/%Y')\n"
            f"{name}['item_name'] = {name}['item_name'].str.strip()\n"
            f"{name} = {name}[{name}['amount'] > 0]{extra}.reset_index(drop=True)\n{name}")


def setup(work: Path) -> None:
    for name, text in ROWS.items():
        (work / f"shop_{name}.csv").write_text(text)
    write_notebook(work / NOTEBOOK, [
        ("md", "# Three shops\nEach export is cleaned, then the months are totalled."),
        ("code", "import pandas as pd"),
        ("code", clean_cell("a")),
        ("code", clean_cell("b")),
        ("md", "Shop C's till sends every sale twice: drop the copies."),
        ("code", clean_cell("c", ".drop_duplicates()")),
        ("code", "totals = pd.concat([a, b, c]).groupby(pd.Grouper(key='date', freq='MS'))['amount'].sum()\ntotals"),
    ])


RESULTS = "{k: v.astype(str).to_dict('records') for k, v in {'a': a, 'b': b, 'c': c}.items()} | " \
          "{'totals': {str(k): str(v) for k, v in totals.items()}}"


def check(work: Path, relay) -> list[str]:
    original = Path(tempfile.mkdtemp(prefix="eval-original-"))
    setup(original)
    _, error, want = execute(original / NOTEBOOK, after=RESULTS)
    assert error is None and want, f"the task's own notebook fails: {error}"
    module = work / "cleaning.py"
    if not module.exists() or "def " not in module.read_text():
        return ["there is no cleaning.py with a function in it"]
    cells = "\n".join(sources(work / NOTEBOOK))
    problems = []
    if "cleaning" not in cells:
        problems.append("the notebook does not import cleaning")
    if cells.count("str.replace(',', '')") or cells.count("to_datetime") > 0:
        problems.append("the notebook still has the cleaning code in its cells")
    _, error, got = execute(work / NOTEBOOK, after=RESULTS)
    if error:
        return problems + [f"the notebook stops: {error}"]
    for key in want:
        if got.get(key) != want[key]:
            problems.append(f"{key} changed: {got.get(key)} instead of {want[key]}")
    return problems
