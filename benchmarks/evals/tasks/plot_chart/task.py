"""Add a chart and check it: monthly mean temperatures, one line per city, saved as a PNG."""

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.evals.checks import execute, write_notebook

NOTEBOOK = "weather.ipynb"
PROMPT = ("In weather.ipynb, add a chart of the monthly mean temperature of each city: one line per city, "
          "with a legend, axis labels and a title. Save it as monthly.png next to the notebook. "
          "Check that the chart is right before you finish.")
CITIES = ("Oslo", "Lisbon", "Vienna")


def data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    days = pd.date_range("2025-01-01", "2025-06-30", freq="D")
    frames = []
    for base, city in zip((-3.0, 12.0, 1.0), CITIES):
        temp = base + 2.5 * np.arange(len(days)) / 30 + rng.normal(0, 2.0, len(days))
        frames.append(pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "city": city, "temp_c": temp.round(1)}))
    return pd.concat(frames).sample(frac=1, random_state=3).reset_index(drop=True)


def setup(work: Path) -> None:
    data().to_csv(work / "temperatures.csv", index=False)
    write_notebook(work / NOTEBOOK, [
        ("md", "# Weather, first half of 2025\nDaily readings, one row per city and day."),
        ("code", "import pandas as pd\nweather = pd.read_csv('temperatures.csv', parse_dates=['date'])\n"
                 "weather.head()"),
        ("code", "weather.groupby('city')['temp_c'].describe()"),
    ])


RECORDER = """
import json as _json, matplotlib
matplotlib.use('Agg')
from matplotlib.figure import Figure as _Figure
_saved = []
_orig_savefig = _Figure.savefig
def _record(self, fname, *a, **k):
    for ax in self.axes:
        legend = ax.get_legend()
        _saved.append({'file': str(fname), 'title': ax.get_title() or self.get_suptitle(),
                       'xlabel': ax.get_xlabel(), 'ylabel': ax.get_ylabel(),
                       'legend': [t.get_text() for t in legend.get_texts()] if legend else [],
                       'lines': {l.get_label(): [float(v) for v in l.get_ydata()] for l in ax.get_lines()}})
    return _orig_savefig(self, fname, *a, **k)
_Figure.savefig = _record
"""


def check(work: Path, relay) -> list[str]:
    (work / "monthly.png").unlink(missing_ok=True)  # the check's own run must write it again
    nb, error, saved = execute(work / NOTEBOOK, before=RECORDER, after="_saved")
    if error:
        return [f"the notebook stops: {error}"]
    png = work / "monthly.png"
    if not png.exists() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        return ["no monthly.png (a PNG) is written by the notebook"]
    charts = [s for s in saved or [] if s["file"].endswith("monthly.png")]
    if not charts:
        return ["monthly.png was not written with savefig"]
    chart = charts[-1]
    expected = data().assign(month=lambda d: d["date"].str[:7]).groupby(["city", "month"])["temp_c"].mean()
    problems = []
    for city in CITIES:
        line = next((v for k, v in chart["lines"].items() if city.lower() in k.lower()), None)
        want = list(expected[city].values)
        if line is None:
            problems.append(f"no line labelled {city}")
        elif len(line) != len(want) or not np.allclose(line, want, atol=0.05):
            problems.append(f"the {city} line is {[round(v, 2) for v in line]}, not the monthly means "
                            f"{[round(v, 2) for v in want]}")
    if not (chart["title"] and chart["xlabel"] and chart["ylabel"]):
        problems.append("the chart lacks a title or axis labels")
    if sorted(t.lower() for t in chart["legend"]) != sorted(c.lower() for c in CITIES):
        problems.append(f"the legend says {chart['legend']}")
    return problems
