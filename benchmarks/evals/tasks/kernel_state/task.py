"""A task that needs the kernel's state: data drawn at random when the notebook runs, a fit no one
can redo by reading the code; the answer is a value in the kernel, and the notebook must stay as it is."""

from pathlib import Path

import numpy as np

from benchmarks.evals.checks import sources, write_notebook

NOTEBOOK = "fit.ipynb"
PROMPT = ("Run fit.ipynb and tell me the fitted coefficient of x2 in `coef`, to 4 decimals. Also write just "
          "that number to answer.txt next to the notebook. Leave the notebook's cells as they are: don't add, "
          "change or delete any.")
CELLS = [
    ("md", "# A fit on today's sample\nThe sample is drawn fresh on every run (and kept in sample.npz)."),
    ("code", "import numpy as np\nrng = np.random.default_rng()\nX = np.column_stack([np.ones(200), "
             "rng.normal(size=(200, 3))])\ny = X @ np.array([0.5, 2.0, -1.3, 0.7]) + rng.normal(0, 0.8, 200)\n"
             "np.savez('sample.npz', X=X, y=y)"),
    ("code", "coef, *_ = np.linalg.lstsq(X, y, rcond=None)\nresid = y - X @ coef\n"
             "print('residual sd', resid.std().round(3))"),
]


def setup(work: Path) -> None:
    write_notebook(work / NOTEBOOK, CELLS)


def check(work: Path, relay) -> list[str]:
    problems = []
    if sources(work / NOTEBOOK) != [s for _, s in CELLS]:
        problems.append("the notebook's cells were changed")
    sample, answer = work / "sample.npz", work / "answer.txt"
    if not sample.exists():
        return problems + ["the notebook was not run (no sample.npz)"]
    data = np.load(sample)
    coef = np.linalg.lstsq(data["X"], data["y"], rcond=None)[0]
    want = f"{coef[2]:.4f}"
    got = answer.read_text().strip() if answer.exists() else None
    if got != want:
        problems.append(f"answer.txt says {got!r}; the kernel's last sample gives {want}")
    return problems
