"""Property: losing or damaging middle segments never costs the intact data (Hypothesis).

Append, roll, stop (cleanly, or as a crash with the checkpoints lost), delete, tear or
flip a bit in random middle segments, restart: every batch not deleted, torn off or
flipped is served by a read from its offset and by a full scan from the log start, and
appends continue at the old end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from protocol.records import iter_batches
from tests.log.batches import make_batch

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=200)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([5, 60, 400, 900])), min_size=8, max_size=60),
    rolls=st.sets(st.integers(1, 59), min_size=2, max_size=8),
    lost=st.sets(st.integers(0, 30), min_size=1, max_size=4),
    torn=st.one_of(st.none(), st.tuples(st.integers(0, 30), st.floats(0, 1))),
    flip=st.one_of(st.none(), st.tuples(st.integers(0, 30), st.integers(0, 10**6), st.integers(0, 7))),
    clean=st.booleans(),
)
def test_surviving_batches_are_served(sizes, rolls, lost, torn, flip, clean):
    root = Path(tempfile.mkdtemp(prefix="kbroker-lost-"))
    try:
        _check(root / "t-0", sizes, rolls, lost, torn, flip, clean)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check(directory: Path, sizes, rolls, lost, torn, flip, clean) -> None:
    log = PartitionLog.open(directory, CONFIG)
    for i, (records, value_size) in enumerate(sizes):
        if i in rolls:
            log.roll()
        log.append(make_batch(records, value_size, 1_000 + i, seed=i))
    layout = {
        s.base_offset: [(b.position, bytes(b.view())) for b in iter_batches(s.pread(0, s.size))] for s in log.segments
    }
    end = log.log_end_offset
    if clean:
        log.flush_sync()
        log.close()
    else:
        log.release_files()  # a crash: nothing more written, and the checkpoints are lost below
    bases = sorted(layout)
    middle = bases[1:-1]
    assume(middle)
    survivors = {base: list(batches) for base, batches in layout.items()}
    for pick in lost:
        base = middle[pick % len(middle)]
        (directory / f"{base:020d}.log").unlink(missing_ok=True)
        survivors[base] = []
    if flip is not None and not clean:  # a flipped bit in a batch of a middle segment (CRC-covered bytes)
        base = middle[flip[0] % len(middle)]
        path = directory / f"{base:020d}.log"
        if survivors[base]:
            position, batch = survivors[base][flip[1] % len(survivors[base])]
            at = position + 16 + flip[1] % (len(batch) - 16)  # magic, CRC or the CRC-covered part
            data = bytearray(path.read_bytes())
            data[at] ^= 1 << flip[2]
            path.write_bytes(data)
            survivors[base] = [(p, b) for p, b in survivors[base] if p != position]
    if torn is not None and not clean:  # a torn middle segment: only an unclean start scans it
        base = middle[torn[0] % len(middle)]
        path = directory / f"{base:020d}.log"
        if path.exists():
            size = path.stat().st_size
            cut = int(size * torn[1])
            os.truncate(path, cut)
            survivors[base] = [(p, b) for p, b in survivors[base] if p + len(b) <= cut]
    kept = [b for base in bases for _, b in survivors[base]]

    log = PartitionLog.open(
        directory, CONFIG, clean_shutdown=clean, recovery_point=end if clean else 0, log_start_offset=0
    )
    try:
        assert log.log_end_offset == end  # the newest segment is intact: no offset is handed out again
        assert [bytes(b.view()) for b in log.batches()] == kept
        ranges = [(h.base_offset, h.next_offset) for h in (next(iter_batches(b)) for b in kept)]
        for batch, (base, _) in zip(kept, ranges, strict=True):
            assert next(iter_batches(log.read(base, 1).read())).view().tobytes() == batch
        # a read at any offset gets the batch holding it, or the next surviving one after a gap
        for offset in range(log.log_start_offset, end):
            expected = next((base for base, following in ranges if following > offset), None)
            result = log.read(offset, 1)
            assert (result.first_offset if result.region is not None else None) == expected, offset
        missing = sum(to - start for start, to in log.recovery.gaps)
        assert missing == end - log.log_start_offset - sum(following - base for base, following in ranges)
        assert log.append(make_batch(2)).base_offset == end
    finally:
        log.close()
