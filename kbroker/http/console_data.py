"""The web console's data: plain dicts shaped from the broker's state for the console's JSON endpoints.

Pure: no aiohttp, no I/O beyond what the objects passed in do; kbroker/http/console.py serves it.
Record bytes are answered in every rendering the browser may show (text, JSON, hex), each bounded,
so the page never parses hostile bytes itself and never receives more than the caps below.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

MAX_SHOWN_BYTES = 16 * 1024  # of a key, value or header value; the rest is counted, not sent
MAX_MESSAGES = 200  # per message-browser page
MAX_PAGE_BYTES = 1024 * 1024  # of record bytes shown per page (each shown about 4 times: text, JSON, hex)


def render_bytes(data: bytes | None) -> dict[str, Any] | None:
    """A key, value or header value as the console shows it: its size, and its first MAX_SHOWN_BYTES
    as hex, as text when they are UTF-8, as indented JSON when the whole of it is JSON."""
    if data is None:
        return None
    shown = bytes(data[:MAX_SHOWN_BYTES])
    text: str | None
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    pretty: str | None = None
    if text is not None and len(shown) == len(data):
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = None
    return {
        "size": len(data),
        "truncated": len(shown) < len(data),
        "text": text,
        "json": pretty,
        "hex": shown.hex(" "),
    }


def message(topic: str, partition: int, record: Any) -> dict[str, Any]:
    """One record (protocol.records.Record) for the message browser."""
    return {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": render_bytes(record.key),
        "value": render_bytes(record.value),
        "headers": [{"key": header.key, "value": render_bytes(header.value)} for header in record.headers],
    }


def queue_record(record: Any) -> dict[str, Any]:
    """One record of a virtual queue (kbroker.vq's QueueRecord; its key is the queue's name) for the queue
    browser, with the time it is due when delayed and its tag."""
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "due_at": record.due_at,
        "tag": record.tag,
        "value": render_bytes(record.value),
        "headers": [{"key": header.key, "value": render_bytes(header.value)} for header in record.headers],
    }


def queue_records_page(records: Iterable[Any], budget: int = MAX_PAGE_BYTES) -> list[dict[str, Any]]:
    """The records shaped by queue_record, stopping before the one that would pass about `budget` bytes
    shown (the first always shows)."""
    out: list[dict[str, Any]] = []
    for record in records:
        size = shown_bytes(record)
        if out and size > budget:
            break
        budget -= size
        out.append(queue_record(record))
    return out


def shown_bytes(record: Any) -> int:
    """How many of a record's bytes a page shows (each key, value and header value up to MAX_SHOWN_BYTES)."""
    parts = [getattr(record, "key", None), record.value, *(header.value for header in record.headers)]
    return sum(min(len(part), MAX_SHOWN_BYTES) for part in parts if part is not None)


def message_shown_bytes(shaped: dict[str, Any]) -> int:
    """shown_bytes of a record already shaped by message()."""
    parts = [shaped["key"], shaped["value"], *(header["value"] for header in shaped["headers"])]
    return sum(min(part["size"], MAX_SHOWN_BYTES) for part in parts if part is not None)


def messages_from_batches(
    topic: str, partition: int, batches: Iterable[Any], start: int, end: int, limit: int,
    budget: int = MAX_PAGE_BYTES,
) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """The data records of `batches` with start <= offset < end, at most `limit` and about `budget` bytes
    shown (the first record always); and the offset to read from next (control batches and records
    below `start` are skipped)."""
    out: list[dict[str, Any]] = []
    next_offset = start
    for batch in batches:
        if batch.is_control:
            next_offset = max(next_offset, min(batch.next_offset, end))
            continue
        for record in batch.records():
            if record.offset < start:
                continue
            if record.offset >= end or len(out) >= limit:
                return out, next_offset
            size = shown_bytes(record)
            if out and size > budget:
                return out, next_offset
            budget -= size
            out.append(message(topic, partition, record))
            next_offset = record.offset + 1
        if len(out) < limit:
            next_offset = max(next_offset, min(batch.next_offset, end))
    return out, next_offset


def partition_summary(index: int, unified: Any) -> dict[str, Any]:
    """A partition's offsets and size (unified: kbroker.log's UnifiedLog)."""
    start, high_watermark = unified.log_start_offset, unified.high_watermark
    return {
        "partition": index,
        "log_start_offset": start,
        "high_watermark": high_watermark,
        "log_end_offset": unified.log_end_offset,
        "last_stable_offset": unified.last_stable_offset(),
        "messages": max(0, high_watermark - start),  # offsets, counting transaction markers and compacted gaps
        "size_bytes": unified.local.size_in_bytes,
    }


def topic_summary(name: str, partitions: list[dict[str, Any]], internal: bool) -> dict[str, Any]:
    return {
        "name": name,
        "internal": internal,
        "partitions": len(partitions),
        "messages": sum(p["messages"] for p in partitions),
        "size_bytes": sum(p["size_bytes"] for p in partitions),
    }


def topic_configs(overrides: Mapping[str, str | None], effective: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """Every effective topic config, marking those the topic sets itself."""
    return [
        {"name": name, "value": value, "source": "topic" if name in overrides else "default"}
        for name, value in sorted(effective.items())
    ]


def lag_rows(
    offsets: Mapping[tuple[str, int], int],
    high_watermarks: Mapping[tuple[str, int], int | None],
    owners: Mapping[tuple[str, int], str],
) -> list[dict[str, Any]]:
    """A group's committed offsets with their lag (high watermark - committed) and the member owning each
    partition; partitions assigned but never committed appear with no committed offset."""
    keys = sorted(set(offsets) | set(owners))
    rows = []
    for key in keys:
        committed = offsets.get(key)
        high_watermark = high_watermarks.get(key)
        lag = None if committed is None or high_watermark is None else max(0, high_watermark - committed)
        rows.append(
            {
                "topic": key[0],
                "partition": key[1],
                "committed": committed,
                "high_watermark": high_watermark,
                "lag": lag,
                "member_id": owners.get(key),
            }
        )
    return rows


def group_summary(
    group_id: str, kind: str, state: str, members: list[dict[str, Any]], lag: list[dict[str, Any]]
) -> dict[str, Any]:
    known = [row["lag"] for row in lag if row["lag"] is not None]
    return {
        "group": group_id,
        "type": kind,
        "state": state,
        "members": len(members),
        "total_lag": sum(known) if known else None,
    }


def share_partition_row(topic: str, index: int, share: Any, high_watermark: int | None) -> dict[str, Any]:
    """A share group's partition (kbroker.share's SharePartition): its share-partition start offset, the
    records in flight and how many are not yet delivered (backlog up to the high watermark)."""
    backlog = None if high_watermark is None else max(0, high_watermark - share.end_offset)
    return {
        "topic": topic,
        "partition": index,
        "start_offset": share.start_offset,
        "end_offset": share.end_offset,
        "in_flight": share.in_flight,
        "high_watermark": high_watermark,
        "backlog": backlog,
    }
