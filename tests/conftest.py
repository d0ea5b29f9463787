"""Suite-wide: the fake Messages API fixtures (fake_api, fake_api_factory, fake_api_env),
and the random order's seed at the end of the report."""

pytest_plugins = ["jupyter_agent.testing.pytest_plugin"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the seed of the random order (pytest-randomly) last, where a failure is read:
    its own header line is hidden by ``-q``, which CI uses."""
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"Tests ran in random order, seed {seed}: repeat this order with "
                                    f"`-p randomly --randomly-seed={seed}`")
