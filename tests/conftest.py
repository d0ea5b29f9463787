"""Suite-wide: the fake Messages API fixtures (fake_api, fake_api_factory, fake_api_env)."""

pytest_plugins = ["jupyter_agent.testing.pytest_plugin"]
