"""A failing import: scikit-learn is not installed and cannot be (no network)."""

import re
from pathlib import Path

import pandas as pd

from benchmarks.evals.checks import execute, sources, write_notebook

NOTEBOOK = "features.ipynb"
PROMPT = ("features.ipynb fails at its first cell. Make the notebook work in this environment; nothing can be "
          "installed here (no network). Keep what it computes the same.")
CSV = "name,height,weight\nana,1.62,58\nbo,1.80,81\ncy,1.75,70\ndee,1.58,49\ned,1.91,95\nfay,1.70,66\n"


def setup(work: Path) -> None:
    (work / "people.csv").write_text(CSV)
    write_notebook(work / NOTEBOOK, [
        ("code", "import pandas as pd\nfrom sklearn.preprocessing import StandardScaler"),
        ("code", "people = pd.read_csv('people.csv')\npeople"),
        ("md", "Standardise height and weight (zero mean, unit variance) before comparing them."),
        ("code", "scaled = StandardScaler().fit_transform(people[['height', 'weight']])\n"
                 "people[['height_z', 'weight_z']] = scaled\npeople.round(3)"),
        ("code", "people['size'] = people['height_z'] + people['weight_z']\n"
                 "people.sort_values('size')['name'].tolist()"),
    ])


def check(work: Path, relay) -> list[str]:
    if any(re.search(r"^\s*(from|import)\s+sklearn", s, re.MULTILINE) for s in sources(work / NOTEBOOK)):
        return ["the notebook still imports sklearn"]
    _, error, got = execute(work / NOTEBOOK, after="people[['height_z', 'weight_z']].round(6).values.tolist()")
    if error:
        return [f"the notebook stops: {error}"]
    people = pd.read_csv(work / "people.csv")
    cols = people[["height", "weight"]]
    want = ((cols - cols.mean()) / cols.std(ddof=0)).round(6).values.tolist()
    if got != want:
        return [f"the standardised columns are {got}, not {want} (StandardScaler divides by the population "
                "standard deviation)"]
    return []
