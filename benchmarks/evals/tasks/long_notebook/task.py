"""A long notebook (120 cells): a threshold overridden deep inside makes the final count wrong."""

from pathlib import Path

from benchmarks.evals.checks import execute, sources, write_notebook

NOTEBOOK = "report.ipynb"
PROMPT = ("The final count of flagged sensors at the end of report.ipynb is wrong: every step should use the "
          "threshold set at the top of the notebook (0.8). Find what breaks it and fix that, so the notebook "
          "runs top to bottom with the right count. Change nothing else.")
OVERRIDE_AT = 84  # its index among the cells


def cells() -> list[tuple[str, str]]:
    out = [("md", "# Sensor report\nReadings of 40 sensors, cleaned and checked step by step."),
           ("code", "import math\nTHRESHOLD = 0.8\n"
                    "readings = {f's{i:02d}': round((math.sin(i * 1.7) + 1) / 2, 3) for i in range(40)}\n"
                    "len(readings)")]
    for k in range(1, 60):
        out.append(("md", f"## Step {k}\nCheck window {k} of the readings."))
        out.append(("code", f"window_{k} = [v for s, v in sorted(readings.items())][{k % 7}:{k % 7 + 5}]\n"
                            f"above_{k} = sum(v > THRESHOLD for v in window_{k})\n"
                            f"print('step {k}: window mean', round(sum(window_{k}) / len(window_{k}), 3), "
                            f"'above', above_{k})"))
    out.insert(OVERRIDE_AT, ("code", "# quick look at borderline sensors\nTHRESHOLD = 0.5\n"
                                     "borderline = [s for s, v in readings.items() if abs(v - THRESHOLD) < 0.05]\n"
                                     "borderline"))
    out.append(("code", "flagged = sorted(s for s, v in readings.items() if v > THRESHOLD)\n"
                        "print(f'flagged sensors: {len(flagged)}')"))
    return out


def setup(work: Path) -> None:
    write_notebook(work / NOTEBOOK, cells())


def check(work: Path, relay) -> list[str]:
    import math

    readings = {f"s{i:02d}": round((math.sin(i * 1.7) + 1) / 2, 3) for i in range(40)}
    want = sorted(s for s, v in readings.items() if v > 0.8)
    now, start = sources(work / NOTEBOOK), [s for _, s in cells()]
    if len(now) < len(start) - 1:
        return [f"the notebook lost cells: {len(now)} of {len(start)}"]
    changed = [i for i, s in enumerate(start) if s not in now and i != OVERRIDE_AT]
    problems = [f"cells changed that had nothing wrong: {changed[:5]}"] if changed else []
    _, error, got = execute(work / NOTEBOOK, after="[flagged, THRESHOLD]")
    if error:
        return problems + [f"the notebook stops: {error}"]
    if got != [want, 0.8]:
        problems.append(f"flagged is {got[0]} with THRESHOLD {got[1]}, not {want} with 0.8")
    return problems
