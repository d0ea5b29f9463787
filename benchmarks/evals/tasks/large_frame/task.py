"""A large data frame (300,000 rows, made at setup): the top customers of a year."""

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.evals.checks import execute, write_notebook

NOTEBOOK = "spend.ipynb"
PROMPT = ("transactions.csv has every purchase of 2024 and 2025 (spend.ipynb loads it as df). Which 3 "
          "customers spent the most in 2025? Add a cell to spend.ipynb that sets `top3` to their customer ids "
          "(a list, highest spender first) and prints it, and tell me their totals.")
ROWS = 300_000


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    days = pd.date_range("2024-01-01", "2025-12-31", freq="D").strftime("%Y-%m-%d").to_numpy()
    return pd.DataFrame({
        "tx_id": np.arange(ROWS),
        "customer_id": "C" + pd.Series(rng.integers(0, 5000, ROWS)).astype(str).str.zfill(4),
        "date": rng.choice(days, ROWS),
        "amount": rng.gamma(2.0, 30.0, ROWS).round(2),
        "status": rng.choice(["paid", "paid", "paid", "refunded"], ROWS),
    })


def setup(work: Path) -> None:
    frame().to_csv(work / "transactions.csv", index=False)
    write_notebook(work / NOTEBOOK, [
        ("md", "# Spend per customer"),
        ("code", "import pandas as pd\ndf = pd.read_csv('transactions.csv')\ndf.shape"),
    ])


def top(df: pd.DataFrame) -> list[str]:
    return list(df.groupby("customer_id")["amount"].sum().sort_values(ascending=False).index[:3])


def check(work: Path, relay) -> list[str]:
    """Either reading passes: all purchases of 2025, or only those not refunded."""
    _, error, got = execute(work / NOTEBOOK, after="list(top3)")
    if error:
        return [f"the notebook stops: {error}"]
    df = pd.read_csv(work / "transactions.csv")
    year = df[df["date"].str[:4] == "2025"]
    want, want_paid = top(year), top(year[year["status"] == "paid"])
    if got not in (want, want_paid):
        return [f"top3 is {got}, not {want} (all of 2025) or {want_paid} (paid only)"]
    return []
