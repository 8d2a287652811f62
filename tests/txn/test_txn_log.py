"""__transaction_state records and the store: round trips, replay, compaction by snapshot."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.log import LogManager
from kbroker.log.coordinator_log import partition_for
from kbroker.txn.runtime import LogStateLog
from kbroker.txn.transaction import TxnRecord, TxnState
from kbroker.txn.txn_log import TxnLogFormatError, parse_txn_key, parse_txn_value, txn_key, txn_value
from kbroker.txn.txn_store import TXN_TOPIC, TxnStateStore


def record(state: TxnState = TxnState.ONGOING, epoch: int = 3) -> TxnRecord:
    return TxnRecord(7, 6, epoch, 2, 60_000, state, frozenset({("orders", 1), ("ünï", 0)}), 100, 200)


def test_record_round_trip() -> None:
    for state in TxnState:
        assert parse_txn_value(txn_value(record(state))) == record(state)
    assert parse_txn_key(txn_key("tx-ü")) == "tx-ü"


def test_version_0_values_are_still_read() -> None:
    v1 = txn_value(record())
    v0 = b"\x00\x00" + v1[2:-9]  # no next producer id, no client transaction version
    assert parse_txn_value(v0) == record()
    rolled = TxnRecord(7, 6, 32767, 32766, 60_000, TxnState.PREPARE_COMMIT, frozenset(), 100, 200, 9000, 2)
    assert parse_txn_value(txn_value(rolled)) == rolled


def test_bad_records_are_refused() -> None:
    with pytest.raises(TxnLogFormatError):
        parse_txn_value(txn_value(record())[:-3])
    with pytest.raises(TxnLogFormatError):
        parse_txn_key(b"\x00\x07" + txn_key("x")[2:])


def test_partition_is_kafkas_hash() -> None:
    assert partition_for("a", 50) == 97 % 50  # "a".hashCode() == 97
    assert partition_for("ab", 50) == (97 * 31 + 98) % 50
    assert partition_for("polygenelubricants", 50) == 0  # hashCode() == Integer.MIN_VALUE: Kafka's Utils.abs gives 0
    assert partition_for("", 50) == 0


def test_replay_and_snapshot(tmp_path: Path) -> None:
    async def scenario() -> None:
        logs = LogManager(tmp_path)
        logs.startup()
        store = TxnStateStore(logs, 3, snapshot_min_bytes=2_000)
        state_log = LogStateLog(store)
        for i in range(200):
            await state_log.write(f"tx-{i % 5}", record(epoch=i))
        await state_log.write("tx-4", None)
        await state_log.stop()
        sizes = {p: logs.get_log(TXN_TOPIC, p).size_in_bytes for p in range(3)}  # type: ignore[union-attr]
        await logs.shutdown()
        reopened = LogManager(tmp_path)
        reopened.startup()
        replayed = LogStateLog(TxnStateStore(reopened, 3)).replay()
        last: dict[str, TxnRecord | None] = {}
        for tid, value in replayed:
            last[tid] = value
        assert last["tx-4"] is None
        assert {tid: r.producer_epoch for tid, r in last.items() if r} == {
            "tx-0": 195,
            "tx-1": 196,
            "tx-2": 197,
            "tx-3": 198,
        }
        assert any(reopened.get_log(TXN_TOPIC, p).log_start_offset > 0 for p in range(3))  # type: ignore[union-attr]
        assert max(sizes.values()) < 200 * 120  # compacted, not 200 records of ~100 bytes in one partition
        await reopened.shutdown()

    asyncio.run(scenario())
