"""The pytest plugin (entry point `pytest11: kbroker = kbroker.testing.plugin`): fixtures that hand
out in-process brokers (kbroker.testing.InProcessBroker).

- `kbroker`: an empty broker for each test. One broker serves the whole session and is reset
  before each test that asks for it (every topic, group, share group, transaction and fault
  goes; client connections left open by the previous test are closed), which takes a few ms.
- `kbroker_factory`: `kbroker_factory(config={...}, http=True)` starts a broker of the test's
  own, configured as asked; each is stopped when the test ends.

The ini option `kbroker_config` (lines of KEY=VALUE, broker properties) configures the shared broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kbroker.testing.broker import InProcessBroker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kbroker_config",
        "broker properties (KEY=VALUE, one a line) of the shared broker behind the kbroker fixture",
        type="linelist",
        default=[],
    )


def ini_config(lines: list[str]) -> dict[str, str]:
    config = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"kbroker_config: expected KEY=VALUE, got {line!r}")
        config[key.strip()] = value.strip()
    return config


@pytest.fixture(scope="session")
def kbroker_session(pytestconfig: pytest.Config) -> Iterator[InProcessBroker]:
    """The session's shared broker behind the `kbroker` fixture (started on first use)."""
    broker = InProcessBroker(ini_config(pytestconfig.getini("kbroker_config"))).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kbroker(kbroker_session: InProcessBroker) -> InProcessBroker:
    """An empty broker: the session's broker, reset."""
    kbroker_session.reset()
    return kbroker_session


@pytest.fixture
def kbroker_factory() -> Iterator[Callable[..., InProcessBroker]]:
    """Start brokers configured for this test: `kbroker_factory(config={...}, http=False, data_dir=None)`."""
    started: list[InProcessBroker] = []

    def make(config: dict[str, Any] | None = None, **options: Any) -> InProcessBroker:
        broker = InProcessBroker(config, **options).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()
