"""Dead letters: copies of the records a share group archived by REJECT or by the delivery limit.

With the group config `errors.deadletterqueue.topic.name` set, each such record is appended, as a
client's produce would be (validated, acks=all), to that topic: key, value and headers of the
original, the time of the copy as its timestamp, and these headers after the original ones (UTF-8
text):

    kbroker-dlq-topic, kbroker-dlq-partition, kbroker-dlq-offset   where the record comes from
    kbroker-dlq-group            the share group
    kbroker-dlq-delivery-count   how many times the group had it delivered
    kbroker-dlq-reason           `rejected` or `delivery-count-limit`
    kbroker-dlq-timestamp        the original record's timestamp (epoch ms)

The copy of a record from partition p goes to partition p % (partitions of the dead-letter topic),
so the dead letters of one partition stay in their order. A missing dead-letter topic is created
with `num.partitions` when `auto.create.topics.enable` is true (as a producer's Metadata request
would create it); otherwise the copies are not made (DeadLetterTopicMissing) and a warning is logged.
A record already deleted from the log (retention, DeleteRecords) has nothing left to copy. Copies the
dead-letter topic refuses for good (larger than its max.message.bytes, refused by its record
validation) are dropped with a warning; a storage error is raised (the caller retries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog

from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import AppendOrigin, PartitionLog, RecordTooLargeError
from kbroker.log.errors import InvalidTopicError, TopicExistsError
from kbroker.log.metadata import validate_topic_name
from kbroker.log.validator import RecordValidationError
from kbroker.share.partition import DeadLetter
from protocol.errors import InvalidRecordError
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import Record, RecordBatch, iter_batches

log = structlog.get_logger(__name__)

if TYPE_CHECKING:
    from kbroker.broker import Broker

READ_BYTES = 1024 * 1024
BATCH_BYTES = 256 * 1024  # a copy batch is cut past this many bytes of values, keys and headers


class DeadLetterTopicMissing(Exception):
    """The dead-letter topic does not exist and may not be created."""


def dead_letter_topic_problem(name: str) -> str | None:
    """Why `name` cannot be a dead-letter topic (None: it can)."""
    try:
        validate_topic_name(name)
    except InvalidTopicError as error:
        return str(error)
    if name in INTERNAL_TOPICS:
        return f"{name} is an internal topic"
    return None


def originals(log: PartitionLog, offsets: Sequence[int]) -> dict[int, Record]:
    """The records at `offsets` (sorted) still in the log."""
    wanted = set(offsets)
    found: dict[int, Record] = {}
    position = max(offsets[0], log.log_start_offset)
    last = offsets[-1]
    while position <= last and position < log.log_end_offset:
        data = log.read(position, READ_BYTES).read()
        before = position
        for batch in iter_batches(data):
            if batch.next_offset <= position:
                continue
            position = batch.next_offset
            if batch.is_control or not any(batch.base_offset <= o <= batch.last_offset for o in wanted):
                continue
            for record in batch.records():
                if record.offset in wanted:
                    found[record.offset] = record
        if position == before:
            break
    return found


def copy_record(
    record: Record, letter: DeadLetter, topic: str, partition: int, group_id: str, now: int
) -> SimpleRecord:
    origin = [
        ("kbroker-dlq-topic", topic.encode()),
        ("kbroker-dlq-partition", str(partition).encode()),
        ("kbroker-dlq-offset", str(letter.offset).encode()),
        ("kbroker-dlq-group", group_id.encode()),
        ("kbroker-dlq-delivery-count", str(letter.delivery_count).encode()),
        ("kbroker-dlq-reason", letter.reason.encode()),
        ("kbroker-dlq-timestamp", str(record.timestamp).encode()),
    ]
    headers = [(h.key, h.value) for h in record.headers] + origin
    return SimpleRecord(record.key, record.value, headers, now)


async def copy_dead_letters(
    broker: Broker, group_id: str, topic: str, partition: int, letters: Sequence[DeadLetter], target: str, now: int
) -> int:
    """Append the copies of `letters` (records of topic-partition) to `target` and wait until they are as durable
    as an acks=all produce; how many were copied. Raises DeadLetterTopicMissing, and what an append raises."""
    logs = broker.logs
    source = logs.get_log(topic, partition)
    if source is None or not letters:
        return 0
    metadata = logs.topic(target)
    if metadata is None:
        if not broker.config.get_bool("auto.create.topics.enable"):
            raise DeadLetterTopicMissing(target)
        try:
            metadata = logs.create_topic(target, broker.config.get_int("num.partitions"))
        except TopicExistsError:
            metadata = logs.topic(target)
        if metadata is None:
            raise DeadLetterTopicMissing(target)
    letters = sorted(letters, key=lambda letter: letter.offset)
    records = originals(source, [letter.offset for letter in letters])
    copies = [
        copy_record(records[letter.offset], letter, topic, partition, group_id, now)
        for letter in letters
        if letter.offset in records
    ]
    unified = logs.get_partition(target, partition % metadata.partitions)
    if unified is None or not copies:
        return 0
    copied = 0
    for chunk in _chunks(copies):
        batch = RecordBatch(bytearray(build_record_batch(chunk, base_offset=0)))
        try:
            info = unified.append_as_leader(batch, AppendOrigin.CLIENT, now=now)
        except (RecordTooLargeError, RecordValidationError, InvalidRecordError) as error:
            log.warning("share_dead_letters_refused", group=group_id, to=target, records=len(chunk), error=str(error))
            continue
        await unified.wait_for_ack(info, -1)
        copied += len(chunk)
    return copied


def _chunks(copies: list[SimpleRecord]) -> list[list[SimpleRecord]]:
    chunks: list[list[SimpleRecord]] = [[]]
    size = 0
    for copy in copies:
        weight = len(copy.key or b"") + len(copy.value or b"") + sum(len(k) + len(v or b"") for k, v in copy.headers)
        if chunks[-1] and size + weight > BATCH_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(copy)
        size += weight
    return chunks
