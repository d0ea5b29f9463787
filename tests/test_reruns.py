"""tests/reruns.py, CI's re-run of browser and server tests, run on a small suite of its own
in a pytest of its own: a marked test that fails once passes on its re-run and is listed under
FLAKY with its first failure; an unmarked test is never re-run; more than --max-flaky re-runs
fail the run; without --rerun-real nothing is re-run (./dev flaky counts first attempts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flaky import outcomes

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

SUITE = '''
import pytest
from pathlib import Path

def fails_once(name):
    mark = Path(__file__).parent / ("failed-" + name)
    if not mark.exists():
        mark.write_text("x")
        raise AssertionError("first failure of " + name)

@pytest.mark.server
def test_server_once():
    fails_once("server")

@pytest.mark.browser
@pytest.mark.parametrize("i", range(N_BROWSER))
def test_browser_once(i):
    fails_once("browser%d" % i)

def test_unit_once():
    fails_once("unit")

def test_fine():
    pass
'''


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, browsers: int = 1,
        unit: bool = False) -> pytest.RunResult:
    pytester.makepyfile(test_suite=SUITE.replace("N_BROWSER", str(browsers)))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    select = [] if unit else ["-k", "not unit"]
    return pytester.runpytest_subprocess("-p", "tests.reruns", "-p", "no:randomly", "-p", "no:cacheprovider",
                                         *select, *args)


def test_a_marked_test_that_fails_once_passes_when_re_run_and_is_listed(pytester, monkeypatch):
    result = run(pytester, monkeypatch, "--rerun-real", "1")
    assert result.ret == 0
    result.assert_outcomes(passed=3)
    assert result.parseoutcomes()["rerun"] == 2
    out = result.stdout.str()
    assert "FLAKY: 2 test(s) needed a re-run" in out
    assert "FLAKY test_suite.py::test_server_once: failed in call and passed when re-run" in out
    assert "first failure of server" in out and "first failure of browser0" in out


def test_an_unmarked_test_is_never_re_run(pytester, monkeypatch):
    result = run(pytester, monkeypatch, "--rerun-real", "1", "-k", "unit or fine", unit=True)
    assert result.ret == 1
    result.assert_outcomes(passed=1, failed=1)
    assert "FLAKY" not in result.stdout.str()


def test_more_re_runs_than_the_limit_fail_the_run(pytester, monkeypatch):
    result = run(pytester, monkeypatch, "--rerun-real", "1", "--max-flaky", "3", browsers=3)
    result.assert_outcomes(passed=5)  # every test passed on its re-run...
    assert result.parseoutcomes()["rerun"] == 4
    assert result.ret == 1  # ...and the run fails all the same
    assert "4 tests needed a re-run, more than 3" in result.stdout.str()


def test_without_the_option_nothing_is_re_run(pytester, monkeypatch):
    result = run(pytester, monkeypatch, f"--junitxml={pytester.path / 'report.xml'}")
    assert result.ret == 1
    result.assert_outcomes(passed=1, failed=2)
    seen = outcomes(pytester.path / "report.xml")  # what ./dev flaky counts
    assert seen == {"test_suite::test_server_once": "failed", "test_suite::test_browser_once[0]": "failed",
                    "test_suite::test_fine": "passed"}
