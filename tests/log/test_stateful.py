"""Random operations on a PartitionLog, checked against a list of batches (Hypothesis stateful)."""

import dataclasses
import shutil
import tempfile
from bisect import bisect_right
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from protocol.records import iter_batches
from tests.log.batches import make_batch

CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=150, segment_index_bytes=8 * 6, file_delete_delay_ms=0)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kbroker-stateful-"))
        self.config = CONFIG
        self.log = PartitionLog.open(self.root / "t-0", self.config)
        self.batches: list[bytes] = []  # every batch appended, as stored
        self.bases: list[int] = []
        self.timestamps: list[int] = []  # per offset
        self.log_start = 0
        self.clock = 10_000_000
        self.checkpoint_start = 0
        self.checkpoint_recovery = 0

    @property
    def end(self) -> int:
        return len(self.timestamps)

    def teardown(self) -> None:
        self.log.release_files()
        shutil.rmtree(self.root, ignore_errors=True)

    def _offset(self, fraction: float) -> int:
        return self.log_start + int(fraction * (self.end - self.log_start))

    @rule(
        shapes=st.lists(st.tuples(st.integers(1, 5), st.sampled_from([0, 10, 120, 900])), min_size=1, max_size=3),
        jitter=st.integers(-50, 50),
    )
    def append(self, shapes, jitter):
        buffer = bytearray()
        stamps = []
        for records, value_size in shapes:
            timestamp = self.clock + jitter
            buffer += make_batch(records, value_size, timestamp, seed=len(self.batches))
            stamps += [timestamp + k for k in range(records)]
        info = self.log.append(buffer, now=self.clock)
        assert info.base_offset == self.end and info.last_offset == self.end + len(stamps) - 1
        for batch in iter_batches(bytes(buffer)):
            self.bases.append(batch.base_offset)
            self.batches.append(bytes(batch.view()))
        self.timestamps += stamps

    @rule(fraction=st.floats(0, 1), max_bytes=st.integers(1, 6000))
    def read(self, fraction, max_bytes):
        offset = self._offset(fraction)
        result = self.log.read(offset, max_bytes)
        if offset == self.end:
            assert result.region is None
            return
        data = result.read()
        got = [bytes(b.view()) for b in iter_batches(data)]
        first = bisect_right(self.bases, offset) - 1
        assert got == self.batches[first : first + len(got)]
        assert len(got) == 1 or len(data) <= max_bytes
        assert result.first_offset == self.bases[first]

    @rule(timestamp=st.integers(-60, 60), fraction=st.floats(0, 1))
    def offset_for_timestamp(self, timestamp, fraction):
        target = self.clock - int(fraction * 5000) + timestamp
        expected = next(
            ((ts, off) for off, ts in enumerate(self.timestamps) if off >= self.log_start and ts >= target), None
        )
        assert self.log.fetch_offset_by_timestamp(target) == expected

    @rule(ms=st.integers(1, 400))
    def tick(self, ms):
        self.clock += ms

    @rule()
    def roll(self):
        self.log.roll()

    @rule(fraction=st.floats(0, 1))
    def delete_records(self, fraction):
        offset = self._offset(fraction)
        assert self.log.delete_records(offset) == offset
        self.log_start = offset

    @rule(retention_bytes=st.integers(0, 8000), retention_ms=st.sampled_from([-1, 0, 300, 2000]))
    def retention(self, retention_bytes, retention_ms):
        self.log.update_config(
            dataclasses.replace(self.config, retention_bytes=retention_bytes, retention_ms=retention_ms)
        )
        self.log.delete_old_segments(now=self.clock)
        self.log.purge_deleted_segments(now=self.clock)
        self.log.update_config(self.config)
        new_start = self.log.log_start_offset
        assert new_start >= self.log_start
        if new_start > self.log_start:
            assert new_start in self.bases or new_start == self.end  # whole segments only
        assert self.log.segments[0].base_offset <= new_start
        self.log_start = new_start

    @rule()
    def checkpoint(self):
        self.checkpoint_start = self.log.log_start_offset
        self.checkpoint_recovery = self.log.recovery_point

    @rule()
    def flush(self):
        self.log.flush_sync()
        assert self.log.recovery_point == self.end

    @rule()
    def clean_restart(self):
        self.log.flush_sync()
        self.log.close()
        self.log = PartitionLog.open(
            self.root / "t-0",
            self.config,
            log_start_offset=self.log_start,
            recovery_point=self.end,
            clean_shutdown=True,
        )
        assert self.log.recovery.segments_scanned == 0

    @rule()
    def unclean_restart(self):
        self.log.release_files()
        self.log = PartitionLog.open(
            self.root / "t-0",
            self.config,
            log_start_offset=self.checkpoint_start,
            recovery_point=self.checkpoint_recovery,
        )
        assert self.log.recovery.bytes_truncated == 0
        # like Kafka, a log start offset newer than the last checkpoint can be forgotten
        assert self.log.log_start_offset <= self.log_start
        self.log_start = self.log.log_start_offset

    @invariant()
    def offsets_agree(self):
        assert self.log.log_end_offset == self.log.high_watermark == self.end
        assert self.log.log_start_offset == self.log_start
        assert self.log.recovery_point <= self.end
        assert self.log.segments[0].base_offset <= self.log_start


LogMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=50, deadline=None)
TestLogMachine = LogMachine.TestCase
