"""kbroker's share-group extensions over the raw protocol against a real kbroker: a waiting ShareFetch is woken
when a delayed record becomes due; delayed records pending across kill -9 are delivered once due, at their time,
and never before. Scenarios with real share consumers are tests/compat/scenarios/test_share_extensions.py."""

from __future__ import annotations

import time
from collections.abc import Callable

from protocol import compression
from protocol.api_keys import ApiKey
from protocol.record_builder import SimpleRecord, build_record_batch
from tests.broker.conftest import create_topic, produce, unique_topic
from tests.broker.test_share_groups import ACCEPT, acquired, join, share_acknowledge, share_fetch, topic_id
from tests.process import BrokerProcess, RawClient


def now_ms() -> int:
    return int(time.time() * 1000)


def records(*items: tuple[bytes, int | None], codec: int = compression.NONE) -> bytes:
    """One batch: (value, delivery time or None) per record."""
    built = [
        SimpleRecord(b"k", value, [] if at is None else [("kbroker-deliver-at", str(at).encode())], now_ms())
        for value, at in items
    ]
    return build_record_batch(built, compression_type=codec)


def earliest(raw: RawClient, group: str) -> None:
    configs = [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]
    body = {"resources": [{"resource_type": 32, "resource_name": group, "configs": configs}], "validate_only": False}
    assert raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == 0


def test_a_waiting_share_fetch_is_woken_when_a_delayed_record_is_due(broker: BrokerProcess, raw: RawClient) -> None:
    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)
    tid = topic_id(raw, topic)
    earliest(raw, group)
    join(raw, group, "m1", topic)
    due = now_ms() + 1500
    assert produce(raw, topic, records((b"later", due), (b"now", None)))["error_code"] == 0
    assert acquired(share_fetch(raw, group, "m1", 0, tid)) == [(1, 1)]
    began = now_ms()
    response = share_fetch(raw, group, "m1", 1, tid, acks=[(1, 1, ACCEPT)], max_wait_ms=10_000)
    answered = now_ms()
    assert acquired(response) == [(0, 1)]
    assert due <= answered < max(began, due) + 1000  # woken at the due time, not at the end of the 10 s wait


def test_delayed_records_pending_across_kill_9(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker("--config", "share.coordinator.state.topic.num.partitions=3")
    topic, group = unique_topic("share"), unique_topic("sg")
    with RawClient(broker.bootstrap) as raw:
        create_topic(raw, topic)
        tid = topic_id(raw, topic)
        earliest(raw, group)
        join(raw, group, "m0", topic)
        base = now_ms()
        due = {0: base + 4000, 2: base + 3_600_000, 4: base + 5000}  # offset 2: an hour away
        batch = records((b"d0", due[0]), (b"n1", None), (b"d2", due[2]), (b"n3", None), codec=compression.ZSTD)
        assert produce(raw, topic, batch)["error_code"] == 0
        assert produce(raw, topic, records((b"d4", due[4]), (b"n5", None)))["error_code"] == 0
        assert acquired(share_fetch(raw, group, "m0", 0, tid)) == [(1, 1), (3, 1), (5, 1)]
        answer = share_acknowledge(raw, group, "m0", 1, tid, [(1, 1, ACCEPT), (3, 3, ACCEPT)])
        assert answer["responses"][0]["partitions"][0]["error_code"] == 0  # 5 stays acquired, unacknowledged
    broker.kill()
    broker.start()
    with RawClient(broker.bootstrap) as raw:
        join(raw, group, "m1", topic)
        got = acquired(share_fetch(raw, group, "m1", 0, tid, max_wait_ms=0))
        assert got == [(5, 2)] and now_ms() < due[0]  # acknowledged 1 and 3 never come back; 0 and 4 not yet due
        delivered: dict[int, int] = {}
        epoch = 1
        deadline = time.monotonic() + 20
        while len(delivered) < 2 and time.monotonic() < deadline:
            response = share_fetch(raw, group, "m1", epoch, tid, acks=[(5, 5, ACCEPT)] if epoch == 1 else [])
            epoch += 1
            for offset, count in acquired(response):
                assert count == 1
                delivered[offset] = now_ms()
        assert set(delivered) == {0, 4}  # never offset 2: an hour away
        assert delivered[0] >= due[0] and delivered[4] >= due[4]
        answer = share_acknowledge(raw, group, "m1", epoch, tid, [(0, 0, ACCEPT), (4, 4, ACCEPT)])
        assert answer["responses"][0]["partitions"][0]["error_code"] == 0
        described = raw.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]})
        partition = described["groups"][0]["topics"][0]["partitions"][0]
        assert partition["start_offset"] == 2  # everything else is done: the held record keeps the start offset
