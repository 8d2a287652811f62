"""Child process of the disk-full test: a real short write and EFBIG via RLIMIT_FSIZE."""

from __future__ import annotations

import resource
import signal
import sys
from pathlib import Path

from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError
from kbroker.log.partition_log import PartitionLog
from protocol.records import iter_batches
from tests.log.batches import make_batch

LIMIT = 20_000


def main(directory: str) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    log = PartitionLog.open(Path(directory), LogConfig(segment_bytes=1 << 20))
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))
    appended = 0
    try:
        while True:
            log.append(make_batch(3, 300, seed=appended))
            appended += 1
    except KafkaStorageError as error:
        print("ERROR", error)
    size = log.active_segment.size
    on_disk = Path(log.active_segment.log_path).stat().st_size
    batches = list(iter_batches(log.read(0, 1 << 30).read()))
    assert size <= LIMIT and on_disk == size, (size, on_disk)
    assert len(batches) == appended and all(b.is_valid() for b in batches)
    assert log.log_end_offset == 3 * appended
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space is back
    info = log.append(make_batch(3, 300))
    assert info.base_offset == 3 * appended
    log.close()
    reopened = PartitionLog.open(Path(directory), LogConfig(segment_bytes=1 << 20))
    assert reopened.log_end_offset == 3 * appended + 3 and reopened.recovery.bytes_truncated == 0
    reopened.close()
    print("OK", appended)


if __name__ == "__main__":
    main(sys.argv[1])
