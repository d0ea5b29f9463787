"""Three live %%agent runs at once in one JupyterLab server: the code path of
``benchmarks/bench_load.py`` (tests/jupyter/many_runs.py), checked for correctness only.

Three notebooks, each with its own kernel, as three tabs of one page (one page: the
cheapest in CI, and the case where one page serves several kernels): every run completes,
and each saved notebook holds its own run's cell and output and nothing of the others' (a
reply crossed between kernels, or a page answering for another notebook, would put a cell
in the wrong file or leave a run waiting). No timing is asserted.
"""

from __future__ import annotations

import pytest

from .lab import HAVE_BROWSER, Lab, require_browser
from .many_runs import ManyRuns, page_config_exposing_app

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"), api.env())
    page_config_exposing_app(server)
    yield server
    server.close()


def test_three_runs_at_once_each_edit_only_their_own_notebook(lab, api):
    runs = ManyRuns(lab, api, 3, timeout=120)
    try:
        runs.open()
        runs.run_phase("load", together=True)
        runs.check(["load"])
        assert {phase for phase, _, _ in runs.timings()} == {"load"}  # the kernels timed their requests
    finally:
        lab.finish("many_runs")  # screenshots of the pages, then closes them
