"""Fix a notebook that stops with an error: a column spelled wrong (a KeyError three cells in)."""

from pathlib import Path

from benchmarks.evals.checks import execute, write_notebook

NOTEBOOK = "sales.ipynb"
PROMPT = "sales.ipynb stops with an error. Fix it so that it runs from top to bottom."

CSV = """region,product,units,unit_price
north,apples,10,1.5
north,pears,4,2.0
south,apples,7,1.5
south,plums,12,0.5
east,pears,3,2.0
east,apples,9,1.5
"""


def setup(work: Path) -> None:
    (work / "sales.csv").write_text(CSV)
    write_notebook(work / NOTEBOOK, [
        ("md", "# Sales by region"),
        ("code", "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales.head()"),
        ("code", "sales['revenue'] = sales['Units'] * sales['unit_price']"),
        ("code", "by_region = sales.groupby('region')['revenue'].sum().sort_values(ascending=False)\nby_region"),
        ("code", "print(f\"best region: {by_region.index[0]} ({by_region.iloc[0]:.2f})\")"),
    ])


def check(work: Path, relay) -> list[str]:
    nb, error, value = execute(work / NOTEBOOK, after="by_region.round(2).to_dict()")
    if error:
        return [f"the notebook still stops: {error}"]
    if value != {"north": 23.0, "east": 19.5, "south": 16.5}:
        return [f"by_region is {value}, not the revenue per region"]
    return []
