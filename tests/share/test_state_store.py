"""__share_group_state: record layout, write then load after a stop, tombstones, rewrite when grown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.log import LogConfig, LogManager
from kbroker.share.partition import RecordState, StateBatch
from kbroker.share.state_records import ShareState, StateKey, decode_key, decode_value, encode_key, encode_value
from kbroker.share.state_store import STATE_TOPIC, ShareStateStore

KEY = StateKey("grøup", bytes(range(16)), 7)
STATE = ShareState(
    42,
    (StateBatch(42, 44, RecordState.AVAILABLE, 2), StateBatch(45, 45, RecordState.ACKNOWLEDGED, 1)),
)


def test_layout_round_trips_and_rejects_garbage() -> None:
    assert decode_key(encode_key(KEY)) == KEY
    assert decode_value(encode_value(STATE)) == STATE
    with pytest.raises(ValueError):
        decode_key(b"\x00\x05ab")
    with pytest.raises(ValueError):
        decode_value(encode_value(STATE)[:-1])


def open_store(data_dir: Path, **kwargs: int) -> tuple[LogManager, ShareStateStore]:
    logs = LogManager(data_dir, LogConfig())
    logs.startup()
    return logs, ShareStateStore(logs, 3, **kwargs)


def test_written_states_load_after_an_unclean_stop_and_tombstones_remove(tmp_path: Path) -> None:
    logs, store = open_store(tmp_path)
    other = StateKey("g2", bytes(16), 0)
    asyncio.run(store.write({KEY: STATE, other: ShareState(0, ())}))
    asyncio.run(store.write({other: None, KEY: ShareState(46, ())}))
    logs.abort()  # no clean-shutdown marker: recovery on the next start
    logs, store = open_store(tmp_path)
    assert store.load() == {KEY: ShareState(46, ())}
    assert logs.topic(STATE_TOPIC) is not None and logs.topic(STATE_TOPIC).partitions == 3  # type: ignore[union-attr]


def test_a_grown_partition_is_rewritten_as_its_live_states(tmp_path: Path) -> None:
    logs, store = open_store(tmp_path, rewrite_min_bytes=2000)
    for start in range(200):
        asyncio.run(store.write({KEY: ShareState(start, STATE.batches)}))
    partition = store.partition_for(KEY)
    assert store.partitions_to_rewrite() == [partition]
    asyncio.run(store.rewrite(partition, {KEY: ShareState(199, STATE.batches)}))
    assert store.partitions_to_rewrite() == []
    partition_log = logs.get_partition(STATE_TOPIC, partition)
    assert partition_log is not None and partition_log.log_start_offset == partition_log.log_end_offset - 1
    logs.abort()
    _, store = open_store(tmp_path)
    assert store.load() == {KEY: ShareState(199, STATE.batches)}
