"""kill -9 of the broker under a KIP-848 consumer group, on kbroker and on Apache Kafka.

The broker is one the scenario can kill and restart on the same data directory: a kbroker of its own
(tests/compat/own_broker.py) or, when the suite runs against Kafka (KBROKER_BOOTSTRAP), a second
Apache Kafka node started for this module (tests/kafka_ref.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Protocol

import pytest

from tests.compat.clients.members import MemberConfig
from tests.compat.conftest import KBROKER_ARGS
from tests.compat.group_support import (
    assert_exactly_once,
    close_all,
    collect,
    keyed,
    mark_all,
    open_members,
    unique,
    wait_balanced,
)
from tests.compat.own_broker import OwnBroker
from tests.compat.support import Compat
from tests.ports import free_port

AGAINST_KAFKA = bool(os.environ.get("KBROKER_BOOTSTRAP"))


class Restartable(Protocol):
    @property
    def bootstrap(self) -> str: ...

    def restart_after_kill9(self) -> None: ...


@pytest.fixture(scope="module")
def crash_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restartable]:
    if AGAINST_KAFKA:
        from tests.kafka_ref import KafkaRef

        kafka = KafkaRef().start()
        try:
            yield kafka
        finally:
            kafka.stop()
        return
    data = tmp_path_factory.mktemp("kbroker-crash") / "data"
    broker = OwnBroker(data, free_port(), list(KBROKER_ARGS)).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.mark.timeout(400)
def test_consumer_protocol_group_carries_on_across_kill9(compat: Compat, crash_broker: Restartable) -> None:
    """KIP-848 members stay in the group across a broker kill -9: same partitions, committed offsets kept,
    the records produced after the restart each consumed once."""
    compat.need(ops=("group",), caps=("group.consumer_protocol",), apis=("ConsumerGroupHeartbeat",))
    c = dataclasses.replace(compat, bootstrap=crash_broker.bootstrap)
    topic = c.setup_topic("cgroup-kill9", 4)
    cfg = MemberConfig(unique("cgroup", c), topic, protocol="consumer")
    members = open_members(c, cfg, 2)
    try:
        wait_balanced(members, 4)
        before = [set(m.assignment) for m in members]
        first = keyed("first", 40, 4)
        mark_all(members)
        c.setup_produce(topic, first)
        assert_exactly_once(collect(members, len(first)), first)
        for m in members:
            m.member.commit()
        crash_broker.restart_after_kill9()
        second = keyed("second", 40, 4)
        mark_all(members)
        c.setup_produce(topic, second)
        assert_exactly_once(collect(members, len(second), timeout_s=150), second)
        assert [set(m.assignment) for m in members] == before, "the members were rebalanced"
    finally:
        close_all(members)
    # a new member of the group resumes from the offsets committed before the crash (nothing of `first`)
    (again,) = open_members(c, cfg, 1)
    try:
        third = keyed("third", 8, 4)
        c.setup_produce(topic, third)
        records = collect([again], len(second) + len(third), timeout_s=150)
    finally:
        close_all([again])
    assert_exactly_once(records, second + third)
