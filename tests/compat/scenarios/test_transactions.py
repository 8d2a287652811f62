"""Issue 6: transactions. Committed and aborted transactions seen by read_committed and read_uncommitted
consumers, fencing by a second producer with the same transactional id, a transaction aborted by its timeout,
and consume-transform-produce with the consumed offsets in the transaction."""

from __future__ import annotations

import time

import pytest

from protocol.api_keys import ApiKey
from tests.compat.clients.adapter import ClientError, Record
from tests.compat.clients.members import MemberConfig
from tests.compat.group_support import close_all, collect, keyed, open_members, unique
from tests.compat.support import Compat
from tests.process import RawClient


def values(records: list) -> list[bytes | None]:  # type: ignore[type-arg]
    return [r.value for r in records]


def committed_aborted_committed(compat: Compat, topic: str) -> None:
    """c0 c1 committed, a0 a1 aborted, c2 committed."""
    producer = compat.client.txn_producer(compat.bootstrap, unique("txn", compat))
    try:
        for batch, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False), ([b"c2"], True)):
            producer.begin()
            producer.send(topic, [Record(b"k", v, partition=0) for v in batch])
            producer.commit() if commit else producer.abort()
    finally:
        producer.close()


@pytest.mark.timeout(120)
def test_read_committed_sees_committed_only(compat: Compat) -> None:
    compat.need(ops=("txn", "consume"), caps=("consume.read_committed",))
    topic = compat.setup_topic("txn-rc")
    committed_aborted_committed(compat, topic)
    result = compat.client.consume(
        compat.bootstrap, topic, [0], "earliest", 3, timeout_s=20, isolation="read_committed"
    )
    assert result.error is None, result.error_message
    assert values(result.records) == [b"c0", b"c1", b"c2"]


@pytest.mark.timeout(120)
def test_transactions_v2_bump_the_epoch_per_transaction(compat: Compat) -> None:
    """The Java producer 4.x uses transactions v2 (KIP-890) once the broker finalizes transaction.version 2:
    each EndTxn bumps its epoch. Older clients (Java 3.9, ...) keep the epoch InitProducerId gave them."""
    compat.need(ops=("txn", "consume"), caps=("consume.read_committed",))
    topic = compat.setup_topic("txn-v2")
    txn_id = unique("txn", compat)
    producer = compat.client.txn_producer(compat.bootstrap, txn_id)
    try:
        for batch, commit in (([b"c0", b"c1"], True), ([b"a0"], False), ([b"c2"], True)):
            producer.begin()
            producer.send(topic, [Record(b"k", v, partition=0) for v in batch])
            producer.commit() if commit else producer.abort()
    finally:
        producer.close()
    deadline = time.monotonic() + 15  # Kafka answers EndTxn before its markers are written
    with RawClient(compat.bootstrap) as raw:
        while True:
            answer = raw.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn_id]})
            (state,) = answer["transaction_states"]
            if state["transaction_state"] != "PrepareCommit" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert state["error_code"] == 0 and state["transaction_state"] == "CompleteCommit"
    name = compat.client.name
    if name.startswith("java-4"):
        assert state["producer_epoch"] == 3  # one bump per transaction
    elif name.startswith("java-3"):
        assert state["producer_epoch"] == 0
    else:
        assert state["producer_epoch"] in (0, 3)
    result = compat.client.consume(
        compat.bootstrap, topic, [0], "earliest", 3, timeout_s=20, isolation="read_committed"
    )
    assert result.error is None, result.error_message
    assert values(result.records) == [b"c0", b"c1", b"c2"]


@pytest.mark.timeout(120)
def test_read_uncommitted_sees_both(compat: Compat) -> None:
    compat.need(ops=("txn", "consume"))
    topic = compat.setup_topic("txn-ru")
    committed_aborted_committed(compat, topic)
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", 5, timeout_s=20)
    assert result.error is None, result.error_message
    assert values(result.records) == [b"c0", b"c1", b"a0", b"a1", b"c2"]
    # Offsets skip the control records (the COMMIT and ABORT markers).
    assert [r.offset for r in result.records] == [0, 1, 3, 4, 6]


@pytest.mark.timeout(120)
def test_second_producer_fences_the_first(compat: Compat) -> None:
    compat.need(ops=("txn",))
    topic = compat.setup_topic("txn-fence")
    txn_id = unique("txn", compat)
    first = compat.client.txn_producer(compat.bootstrap, txn_id)
    second = None
    try:
        first.begin()
        first.send(topic, [Record(b"k", b"zombie", partition=0)])
        second = compat.client.txn_producer(compat.bootstrap, txn_id)  # bumps the epoch, aborts the open one
        with pytest.raises(ClientError) as failed:
            first.commit()
        assert failed.value.kind == "fenced", failed.value.message
        second.begin()
        second.send(topic, [Record(b"k", b"winner", partition=0)])
        second.commit()
    finally:
        first.close()
        if second is not None:
            second.close()
    assert values(compat.setup_consume(topic, 1)) == [b"winner"]


@pytest.mark.timeout(120)
def test_open_transaction_aborted_after_its_timeout(compat: Compat) -> None:
    compat.need(ops=("txn",))
    topic = compat.setup_topic("txn-timeout")
    producer = compat.client.txn_producer(compat.bootstrap, unique("txn", compat), timeout_ms=2000)
    try:
        producer.begin()
        producer.send(topic, [Record(b"k", b"left-open", partition=0)])
        compat.setup_produce(topic, [Record(b"k", b"after", partition=0)])
        # The open transaction holds the last stable offset until the coordinator aborts it (Kafka checks every 10 s).
        assert values(compat.setup_consume(topic, 1, timeout_s=40)) == [b"after"]
        with pytest.raises(ClientError):
            producer.commit()
    finally:
        producer.close()
    assert values(compat.setup_consume(topic, 2, isolation="read_uncommitted")) == [b"left-open", b"after"]


@pytest.mark.timeout(180)
def test_consume_transform_produce(compat: Compat) -> None:
    """A member reads 10 records; their transforms and its offsets go in a transaction, aborted then committed."""
    compat.need(ops=("group", "txn", "txn.send_offsets"))
    source = compat.setup_topic("ctp-in", 2)
    sink = compat.setup_topic("ctp-out", 1)
    group = unique("group", compat)
    records = keyed("in", 10, 2)
    compat.setup_produce(source, records)
    config = MemberConfig(group, source, session_timeout_ms=compat.session_timeout_ms, isolation="read_committed")
    (member,) = open_members(compat, config, 1)
    producer = compat.client.txn_producer(compat.bootstrap, unique("txn", compat))
    try:
        consumed = collect([member], len(records))
        offsets = {p: max(r.offset for r in consumed if r.partition == p) + 1 for p in (0, 1)}
        out = [Record(r.key, b"out-" + (r.value or b""), partition=0) for r in consumed]
        for commit in (False, True):
            producer.begin()
            producer.send(sink, out)
            producer.send_offsets(member.member, group, source, offsets)
            if commit:
                producer.commit()
            else:
                producer.abort()
                assert committed_offsets(compat, group, source) == {}, "offsets of an aborted transaction"
        deadline = time.monotonic() + 15  # the markers reach the offsets partition after EndTxn returns
        while committed_offsets(compat, group, source) != offsets and time.monotonic() < deadline:
            time.sleep(0.2)
        assert committed_offsets(compat, group, source) == offsets
    finally:
        producer.close()
        close_all([member])
    assert sorted(r.value or b"" for r in compat.setup_consume(sink, 10)) == sorted(r.value or b"" for r in out)
    assert len(compat.setup_consume(sink, 20, isolation="read_uncommitted", timeout_s=5)) == 20


def committed_offsets(compat: Compat, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, read with kafka-python's admin client (RequireStable: waits for markers)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=compat.bootstrap, client_id="compat-setup")
    try:
        found = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in found.items() if tp.topic == topic and om.offset >= 0}
