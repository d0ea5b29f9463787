"""Browser and server tests are re-run once in CI when they fail; every re-run is named.

The suite drives real JupyterLab pages in Chromium, real kernels, Jupyter servers, a
Kernel Gateway, JupyterHub and MCP server processes on a 2-core machine. Each race of such
a test with a loaded machine that CI met was understood and fixed in the test, but a
single unlucky run must not cost a whole landing. So, with ``--rerun-real N`` (``.ci/run``
passes 1), a test marked ``browser`` or ``server`` that fails is run again up to N times
(pytest-rerunfailures does the re-run; its ``flaky`` marker is added here). Nothing else is
re-run: a failing unit test fails the run at once.

Every test that needed a re-run is printed at the end under "FLAKY", with its first
failure, so a race is seen and fixed, not hidden; and the run fails when more than
``--max-flaky`` tests (default 3) needed one: many re-runs at once say something is wrong
beyond one unlucky moment. ``./dev flaky`` (tests/flaky.py) hunts such tests: it runs the
chosen tests many times under extra CPU load and prints each one's pass rate.

Which tests are marked: a test that uses a fixture that starts a browser, a Jupyter server
or a kernel (:data:`BROWSER_FIXTURES`, :data:`SERVER_FIXTURES`), every test of a module
listed in :data:`SERVER_MODULES` (those that start such processes themselves), and any
test marked ``pytest.mark.server`` or ``pytest.mark.browser`` by hand.
"""

from __future__ import annotations

import pytest

#: fixtures that start a JupyterLab server and a Chromium page (tests/jupyter/conftest.py)
BROWSER_FIXTURES = frozenset({"lab", "page_of", "nb7"})
#: fixtures that start a kernel or a server process
SERVER_FIXTURES = frozenset({"kernel", "fresh_kernel", "gateway"})
#: modules whose tests start such processes themselves (a kernel, a Jupyter server, the CLI,
#: an MCP server, a shell), by path from the repository's root
SERVER_MODULES = frozenset({
    "tests/jupyter/test_headless.py", "tests/jupyter/test_hub.py", "tests/jupyter/test_remote_kernel.py",
    "tests/jupyter/test_self_run.py", "tests/jupyter/test_warmup.py",
    "tests/lessons/test_notebooks.py", "tests/lessons/test_lessons_browser.py", "tests/loop/test_effects_once.py",
    "tests/mcp/test_client.py", "tests/mcp/test_front.py", "tests/mcp/test_headless.py",
    "tests/mcp_server/test_endpoint.py", "tests/notebook/test_kernel_epoch.py",
    "tests/notebook/test_kernel_control.py", "tests/notebook/test_kernels.py", "tests/notebook/test_run_outputs.py",
    "tests/test_cli.py", "tests/test_cli_untrusted.py", "tests/test_launch.py", "tests/test_programs.py",
    "tests/tools/test_bash.py", "tests/tools/test_tools_through_loop.py",
})
RERUN_MARKERS = ("browser", "server")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jupyter-agent", "jupyter-agent's CI")
    group.addoption("--rerun-real", type=int, default=0, metavar="N",
                    help="re-run a failed test marked browser or server up to N times (CI: 1)")
    group.addoption("--max-flaky", type=int, default=3, metavar="N",
                    help="fail the run when more than N tests needed a re-run (default 3)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives JupyterLab or Notebook 7 in Chromium "
                                       "(re-run once on failure in CI)")
    config.addinivalue_line("markers", "server: starts a kernel, a Jupyter server or another process "
                                       "(re-run once on failure in CI)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reruns = config.getoption("rerun_real")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & BROWSER_FIXTURES and not item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.browser)
        module = item.nodeid.split("::", 1)[0]
        if (fixtures & SERVER_FIXTURES or module in SERVER_MODULES) and not item.get_closest_marker("server"):
            item.add_marker(pytest.mark.server)
        if reruns and any(item.get_closest_marker(m) for m in RERUN_MARKERS):
            item.add_marker(pytest.mark.flaky(reruns=reruns))


def _rerun_reports(config: pytest.Config) -> list[pytest.TestReport]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("rerun", [])) if reporter is not None else []


def _final_outcomes(config: pytest.Config) -> dict[str, str]:
    """nodeid -> "failed" for the tests whose last attempt failed (in any phase)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return {}
    return {r.nodeid: "failed" for key in ("failed", "error") for r in reporter.stats.get(key, [])}


def flaky_tests(config: pytest.Config) -> dict[str, pytest.TestReport]:
    """Each test that needed a re-run -> the report of its first failure."""
    first: dict[str, pytest.TestReport] = {}
    for report in _rerun_reports(config):
        first.setdefault(report.nodeid, report)
    return first


def where_it_failed(report: pytest.TestReport) -> list[str]:
    """The test's own frame where it failed (its last frame in tests/: a browser test's
    traceback ends deep in Playwright) and the error, else the end of the whole text."""
    longrepr = report.longrepr
    entries = getattr(getattr(longrepr, "reprtraceback", None), "reprentries", None) or []
    ours = [e for e in entries if str(getattr(getattr(e, "reprfileloc", None), "path", "")).startswith("tests")]
    lines: list[str] = []
    if ours:
        entry = ours[-1]
        lines += [line for line in entry.lines if line.strip()][-12:]
        lines.append(f"{entry.reprfileloc.path}:{entry.reprfileloc.lineno}")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        lines.append(f"{crash.path}:{crash.lineno}: {crash.message}")
    return lines or report.longreprtext.rstrip().splitlines()[-25:]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller sees every report and decides
    limit = session.config.getoption("max_flaky")
    if len(flaky_tests(session.config)) > limit and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    flaky = flaky_tests(config)
    if not flaky:
        return
    failed = _final_outcomes(config)
    limit = config.getoption("max_flaky")
    terminalreporter.section(f"FLAKY: {len(flaky)} test(s) needed a re-run", sep="=", yellow=True)
    for nodeid, report in flaky.items():
        then = "and failed again" if nodeid in failed else "and passed when re-run"
        terminalreporter.write_line(f"FLAKY {nodeid}: failed in {report.when} {then}; its first failure:")
        for line in where_it_failed(report):
            terminalreporter.write_line(f"    {line}")
    if len(flaky) > limit:
        terminalreporter.write_line(f"FLAKY: {len(flaky)} tests needed a re-run, more than {limit}: "
                                    "the run fails (something beyond one unlucky moment)", red=True)
