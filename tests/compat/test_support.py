"""The suite's own machinery, without a broker: skips name what is missing, drivers answer errors as JSON."""

from __future__ import annotations

import pytest

from tests.compat.clients.adapter import Client
from tests.compat.clients.apiversions import API_KEYS
from tests.compat.support import Compat

EVERYTHING = {key: (0, 20) for key in API_KEYS.values()}


def test_missing_api_skips_with_its_name() -> None:
    advertised = {k: v for k, v in EVERYTHING.items() if k not in (API_KEYS["Produce"], API_KEYS["InitProducerId"])}
    compat = Compat("127.0.0.1:1", advertised, Client(name="x", op_apis={"produce": ("Produce", "InitProducerId")}))
    with pytest.raises(pytest.skip.Exception, match="broker does not implement InitProducerId, Produce yet"):
        compat.need(ops=("produce",))


def test_missing_capability_skips_with_the_clients_reason() -> None:
    compat = Compat("127.0.0.1:1", EVERYTHING, Client(name="x", missing={"compression.lz4": "no codec"}))
    with pytest.raises(pytest.skip.Exception, match="x cannot do compression.lz4: no codec"):
        compat.need(ops=("produce",), caps=("compression.lz4",))


def test_everything_present_does_not_skip() -> None:
    Compat("127.0.0.1:1", EVERYTHING, Client(name="x")).need(ops=("produce", "consume"), caps=("acks.0",))


def test_absent_client_skips_with_install_hint() -> None:
    compat = Compat("127.0.0.1:1", EVERYTHING, "kcat is not installed: run scripts/install_clients")
    with pytest.raises(pytest.skip.Exception, match="run scripts/install_clients"):
        compat.need()


@pytest.mark.parametrize("name", ["java-3.9", "java-4", "franz-go", "kafkajs"])
def test_driver_reports_errors_as_json_with_nonzero_exit(name: str) -> None:
    import json
    import subprocess

    from tests.compat.clients.driver_client import DriverClient
    from tests.compat.clients.registry import FACTORIES

    driver = FACTORIES[name]()
    if not isinstance(driver, DriverClient):
        pytest.skip(str(driver))
    done = subprocess.run([*driver.command, "no_such_op", "{}"], capture_output=True, timeout=60)
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["ok"] is False
    assert "no_such_op" in answer["error"]["message"]


def test_group_checks_fail_on_duplicates_and_gaps() -> None:
    """The group scenarios' checks: a repeated record, a missing one, an unbalanced group all fail."""
    from tests.compat.clients.adapter import Consumed, Record
    from tests.compat.clients.members import GroupDescription, Member, fenced_or_other
    from tests.compat.group_support import Watched, assert_exactly_once, balanced

    def consumed(partition: int, offset: int, value: bytes) -> Consumed:
        return Consumed(partition, offset, b"k", value, (), 0)

    wanted = [Record(b"k", b"a"), Record(b"k", b"b")]
    assert_exactly_once([consumed(0, 0, b"a"), consumed(1, 0, b"b")], wanted)
    with pytest.raises(AssertionError):
        assert_exactly_once([consumed(0, 0, b"a"), consumed(0, 0, b"a"), consumed(1, 0, b"b")], wanted)
    with pytest.raises(AssertionError):
        assert_exactly_once([consumed(0, 0, b"a")], wanted)
    members = [Watched(Member(), assignment={0, 1}), Watched(Member(), assignment={2})]
    assert balanced(members, 3)
    members[1].assignment = {1, 2}
    assert not balanced(members, 3)
    members[1].assignment = set()
    assert not balanced(members, 2)
    assert GroupDescription("Stable", [], {0: 4}, {0: 10, 1: 3}).lag() == {0: 6, 1: 3}
    assert fenced_or_other("KafkaError{code=_FENCED}") == "fenced"
    assert fenced_or_other("ProducerFencedError") == "fenced"
    assert fenced_or_other("timed out") == "other"
