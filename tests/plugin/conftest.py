"""The plugin's fixtures come from its pytest11 entry point once kbroker is installed with it
(`pip install -e .`, as scripts/test does); an environment installed before the entry point
existed gets the same plugin registered here."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    manager = config.pluginmanager
    if not manager.has_plugin("kbroker") and not manager.has_plugin("kbroker.testing.plugin"):
        manager.import_plugin("kbroker.testing.plugin")
