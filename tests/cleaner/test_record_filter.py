"""The cleaner's decisions, batch by batch and record by record, without a broker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kbroker.cleaner.batch_writer import delete_horizon_ms
from kbroker.cleaner.offset_map import OffsetMap, build_offset_map
from kbroker.cleaner.record_filter import LastRecord, RecordFilter
from kbroker.cleaner.txn_metadata import CleanedTransactionMetadata
from kbroker.log.txn_index_file import AbortedTxn
from protocol import compression
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import ControlRecordType, RecordBatch, iter_batches

DAY = 86_400_000


def batch(base: int, *records: tuple[bytes | None, bytes | None], ts: int = 1_000, **kwargs: object) -> bytes:
    simple = [SimpleRecord(key, value, (), ts + i) for i, (key, value) in enumerate(records)]
    return build_record_batch(simple, base_offset=base, **kwargs)  # type: ignore[arg-type]


def marker(base: int, kind: ControlRecordType, producer_id: int, epoch: int = 0) -> bytes:
    return build_control_batch(
        kind, producer_id=producer_id, producer_epoch=epoch, coordinator_epoch=0, timestamp=5_000, base_offset=base
    )


def clean(
    log: Sequence[bytes],
    *,
    now: int = 10_000,
    delete_retention_ms: int = DAY,
    aborted: Sequence[AbortedTxn] = (),
    active: Mapping[int, LastRecord] | None = None,
    map_bytes: int = 1 << 20,
) -> list[RecordBatch]:
    """One cleaning round over the whole `log` (one segment, all dirty)."""
    batches = [RecordBatch(b) for b in log]
    end = batches[-1].next_offset
    offset_map = OffsetMap(map_bytes)
    build_offset_map(offset_map, [(batches, end)], 0, aborted)
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions(aborted)
    record_filter = RecordFilter(
        offset_map,
        transactions,
        now=now,
        delete_retention_ms=delete_retention_ms,
        last_records_of_active_producers=active or {},
        upper_bound_offset=end,
    )
    out = b"".join(data for b in batches if (data := record_filter.filter_batch(b)) is not None)
    cleaned = list(iter_batches(out))
    for b in cleaned:
        b.verify()
    return cleaned


def kept(batches: Sequence[RecordBatch]) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in batches if not b.is_control for r in b.records()]


def test_keeps_each_keys_last_record_with_its_offset_and_timestamp() -> None:
    log = [
        batch(0, (b"a", b"1"), (b"b", b"1"), ts=100),
        batch(2, (b"a", b"2"), (b"c", b"1"), ts=200),
        batch(4, (b"b", b"2"), ts=300),
    ]
    cleaned = clean(log)
    assert kept(cleaned) == [(2, b"a", b"2"), (3, b"c", b"1"), (4, b"b", b"2")]
    first = cleaned[0]
    assert (first.base_offset, first.last_offset, first.records_count) == (2, 3, 2)
    assert [r.timestamp for r in first.records()] == [200, 201]
    assert delete_horizon_ms(first) is None


def test_a_batch_that_loses_records_keeps_its_offset_range_and_producer_fields() -> None:
    log = [
        batch(0, (b"a", b"1"), (b"b", b"1"), (b"c", b"1"), producer_id=7, producer_epoch=2, base_sequence=10),
        batch(3, (b"b", b"2"), (b"x", b"x")),
    ]
    cleaned = clean(log)
    first = cleaned[0]
    assert (first.base_offset, first.last_offset_delta, first.records_count) == (0, 2, 2)
    assert (first.producer_id, first.producer_epoch, first.base_sequence, first.last_sequence) == (7, 2, 10, 12)
    assert kept(cleaned) == [(0, b"a", b"1"), (2, b"c", b"1"), (3, b"b", b"2"), (4, b"x", b"x")]


def test_unchanged_batches_are_copied_byte_for_byte() -> None:
    log = [batch(0, (b"a", b"1")), batch(1, (b"b", b"1"))]
    assert [bytes(b.view()) for b in clean(log)] == log


def test_the_codec_is_kept() -> None:
    for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        log = [batch(0, (b"a", b"1"), (b"b", b"1"), compression_type=codec), batch(2, (b"a", b"2"))]
        cleaned = clean(log)
        assert cleaned[0].compression == codec
        assert kept(cleaned) == [(1, b"b", b"1"), (2, b"a", b"2")]


def test_keyless_records_are_dropped() -> None:
    log = [batch(0, (None, b"v"), (b"a", b"1")), batch(2, (b"b", b"1"))]
    assert kept(clean(log)) == [(1, b"a", b"1"), (2, b"b", b"1")]


def test_a_tombstone_gets_a_delete_horizon_then_goes_after_it() -> None:
    log = [batch(0, (b"a", b"1"), (b"b", b"1")), batch(2, (b"a", None)), batch(3, (b"c", b"1"))]
    first = clean(log, now=10_000, delete_retention_ms=500)
    assert kept(first) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    tombstone_batch = first[1]
    assert delete_horizon_ms(tombstone_batch) == 10_500
    assert [r.timestamp for r in tombstone_batch.records()] == [1_000]  # the record keeps its timestamp
    again = clean([bytes(b.view()) for b in first], now=10_499, delete_retention_ms=500)
    assert kept(again) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    after = clean([bytes(b.view()) for b in first], now=10_500, delete_retention_ms=500)
    assert kept(after) == [(1, b"b", b"1"), (3, b"c", b"1")]


def test_the_last_batch_of_a_round_stays_even_empty() -> None:
    log = [batch(0, (b"a", b"1")), batch(1, (None, b"keyless"), (None, b"keyless"))]
    cleaned = clean(log)
    assert [(b.base_offset, b.last_offset, b.records_count) for b in cleaned] == [(0, 0, 1), (1, 2, 0)]


def test_an_active_producers_last_batch_stays_empty_so_its_sequence_survives() -> None:
    log = [
        batch(0, (b"a", b"1"), producer_id=9, producer_epoch=1, base_sequence=0),
        batch(1, (b"a", b"2"), producer_id=9, producer_epoch=1, base_sequence=1),
        batch(2, (b"a", b"3")),
    ]
    cleaned = clean(log, active={9: LastRecord(1, 1)})
    empty = cleaned[0]
    assert (empty.base_offset, empty.records_count, empty.producer_id, empty.base_sequence) == (1, 0, 9, 1)
    assert kept(cleaned) == [(2, b"a", b"3")]
    # once the producer expired, the batch goes
    assert [b.base_offset for b in clean(log)] == [2]


def test_aborted_data_goes_and_its_marker_stays_until_a_horizon_passes() -> None:
    pid = 4
    log = [
        batch(0, (b"a", b"1")),
        batch(1, (b"a", b"aborted"), (b"z", b"aborted"), producer_id=pid, producer_epoch=0, is_transactional=True),
        marker(3, ControlRecordType.ABORT, pid),
        batch(4, (b"b", b"1")),
    ]
    aborted = [AbortedTxn(pid, 1, 3, 4)]
    first = clean(log, aborted=aborted, delete_retention_ms=100)
    assert kept(first) == [(0, b"a", b"1"), (4, b"b", b"1")]
    assert [b.base_offset for b in first if b.is_control] == [3]  # the data was there in this round
    again = [bytes(b.view()) for b in first]
    second = clean(again, aborted=aborted, now=10_000, delete_retention_ms=100)
    control = [b for b in second if b.is_control]
    assert [delete_horizon_ms(b) for b in control] == [10_100]
    third = clean([bytes(b.view()) for b in second], aborted=aborted, now=10_100)
    assert [b.base_offset for b in third] == [0, 4]


def test_a_commit_marker_stays_while_its_transactions_batches_are_in_the_log() -> None:
    pid = 5
    log = [
        batch(0, (b"a", b"txn"), producer_id=pid, producer_epoch=0, is_transactional=True),
        marker(1, ControlRecordType.COMMIT, pid),
        batch(2, (b"b", b"1")),
    ]
    first = clean(log, delete_retention_ms=100)
    assert kept(first) == [(0, b"a", b"txn"), (2, b"b", b"1")]
    assert [delete_horizon_ms(b) for b in first if b.is_control] == [None]
    superseded = [bytes(b.view()) for b in first] + [batch(3, (b"a", b"2"))]
    second = clean(superseded, now=20_000, delete_retention_ms=100)
    # the transaction's batch went in this round, so its marker was still needed in it
    assert [b.base_offset for b in second] == [1, 2, 3]
    third = clean([bytes(b.view()) for b in second], now=30_000, delete_retention_ms=100)
    assert [delete_horizon_ms(b) for b in third if b.is_control] == [30_100]
    fourth = clean([bytes(b.view()) for b in third], now=30_100)
    assert [b.base_offset for b in fourth] == [2, 3]


def test_a_full_offset_map_ends_the_round_early() -> None:
    log = [batch(i, (b"k%d" % i, b"v")) for i in range(10)]
    offset_map = OffsetMap(24 * 4, load_factor=1.0)
    batches = [RecordBatch(b) for b in log]
    assert build_offset_map(offset_map, [(batches, 10)], 0, [])
    assert (len(offset_map), offset_map.latest_offset) == (4, 3)
    assert not build_offset_map(OffsetMap(1 << 16), [(batches, 10)], 0, [])


def test_a_gap_before_the_next_segment_moves_the_maps_end() -> None:
    offset_map = OffsetMap(1 << 16)
    build_offset_map(offset_map, [([RecordBatch(batch(0, (b"a", b"1")))], 50)], 0, [])
    assert offset_map.latest_offset == 49


def test_the_gil_is_released_every_64_records_also_across_small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cleaner thread decodes records holding the GIL: it pauses every 64 records so that the event
    loop thread gets it back at once. Producers' batches are often smaller than 64 records: the count
    runs across batches (it used to restart at every batch, and a log of small batches never paused)."""
    import time

    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    log = [batch(10 * i, *[(b"k%d" % (i % 7), b"v")] * 10) for i in range(20)]  # 200 records, 10 a batch
    kept_batches = clean(log)
    assert len(pauses) == 2 * (200 // 64)  # the key map's pass, then the rewrite's
    assert {r.key for b in kept_batches for r in b.records()} == {b"k%d" % j for j in range(7)}
