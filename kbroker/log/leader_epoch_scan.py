"""Rebuilding a leader epoch cache from the batch headers of a log that has no checkpoint yet
(a log written before the cache existed): one pass over the headers, never the records."""

from __future__ import annotations

import os
import struct

from kbroker.log.leader_epoch import EpochEntry
from kbroker.log.partition_log import PartitionLog
from protocol.records import LOG_OVERHEAD

CHUNK = 256 * 1024
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")  # base offset, batch length, partition leader epoch


def epochs_in_log(local: PartitionLog) -> list[EpochEntry]:
    """Where each leader epoch first appears in the log, from its batches' partition leader epochs."""
    entries: list[EpochEntry] = []
    for segment in local.segments:
        end = segment.size
        position = 0
        buffer = b""
        buffer_start = 0
        while position < end:
            relative = position - buffer_start
            if relative + _OFFSET_LENGTH_EPOCH.size > len(buffer):
                buffer = os.pread(segment.fd, min(CHUNK, end - position), position)
                buffer_start, relative = position, 0
                if len(buffer) < _OFFSET_LENGTH_EPOCH.size:
                    break  # a torn tail: recovery's business, the epochs before it stand
            base, length, epoch = _OFFSET_LENGTH_EPOCH.unpack_from(buffer, relative)
            if epoch >= 0 and (not entries or epoch > entries[-1].epoch):
                entries.append(EpochEntry(epoch, base))
            if length <= 0:
                break
            position += LOG_OVERHEAD + length
    return entries
