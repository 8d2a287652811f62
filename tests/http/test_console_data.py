"""kbroker/http/console_data.py: the console's data shaping, on records and stand-in partition objects."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kbroker.http import console_data as data
from protocol.records import Header, Record


def test_render_bytes_offers_text_json_and_hex() -> None:
    rendered = data.render_bytes(b'{"a": [1, 2]}')
    assert rendered is not None
    assert rendered["size"] == 13 and not rendered["truncated"]
    assert rendered["text"] == '{"a": [1, 2]}'
    assert json.loads(rendered["json"]) == {"a": [1, 2]} and "\n" in rendered["json"]
    assert rendered["hex"].startswith("7b 22 61")
    assert data.render_bytes(None) is None


def test_render_bytes_binary_and_markup_stay_data() -> None:
    binary = data.render_bytes(b"\xff\x00\x01")
    assert binary == {"size": 3, "truncated": False, "text": None, "json": None, "hex": "ff 00 01"}
    markup = data.render_bytes(b"<script>alert(1)</script>")
    assert markup is not None and markup["text"] == "<script>alert(1)</script>" and markup["json"] is None


def test_render_bytes_is_bounded() -> None:
    big = b"x" * (data.MAX_SHOWN_BYTES + 10)
    rendered = data.render_bytes(big)
    assert rendered is not None and rendered["truncated"] and rendered["size"] == len(big)
    assert len(rendered["text"]) == data.MAX_SHOWN_BYTES and rendered["json"] is None  # a prefix is never "JSON"
    truncated_json = data.render_bytes(b'"' + b"y" * data.MAX_SHOWN_BYTES + b'"')
    assert truncated_json is not None and truncated_json["json"] is None


@dataclass
class Batch:
    records_: list[Record]
    next_offset: int
    is_control: bool = False

    def records(self) -> list[Record]:
        return self.records_


def record(offset: int) -> Record:
    return Record(offset, 1000 + offset, b"k%d" % offset, b"v%d" % offset, [Header("h", b"%d" % offset)])


def test_messages_from_batches_window_limit_and_control() -> None:
    batches = [
        Batch([record(0), record(1), record(2)], 3),
        Batch([], 4, is_control=True),
        Batch([record(4), record(5)], 6),
    ]
    page, after = data.messages_from_batches("t", 0, batches, 1, 6, 10)
    assert [m["offset"] for m in page] == [1, 2, 4, 5] and after == 6
    assert page[0]["key"]["text"] == "k1" and page[0]["headers"] == [{"key": "h", "value": data.render_bytes(b"1")}]
    page, after = data.messages_from_batches("t", 0, batches, 0, 6, 2)
    assert [m["offset"] for m in page] == [0, 1] and after == 2
    page, after = data.messages_from_batches("t", 0, batches, 0, 5, 10)  # the high watermark bounds it
    assert [m["offset"] for m in page] == [0, 1, 2, 4] and after == 5
    page, after = data.messages_from_batches("t", 0, batches[1:2], 3, 6, 10)  # a control batch alone moves on
    assert page == [] and after == 4


@dataclass
class Local:
    size_in_bytes: int


@dataclass
class Unified:
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    local: Local
    lso: int

    def last_stable_offset(self) -> int:
        return self.lso


def test_partition_and_topic_summaries() -> None:
    p0 = data.partition_summary(0, Unified(2, 10, 11, Local(500), 8))
    p1 = data.partition_summary(1, Unified(0, 0, 0, Local(0), 0))
    assert p0 == {"partition": 0, "log_start_offset": 2, "high_watermark": 10, "log_end_offset": 11,
                  "last_stable_offset": 8, "messages": 8, "size_bytes": 500}  # fmt: skip
    assert data.topic_summary("t", [p0, p1], False) == {
        "name": "t", "internal": False, "partitions": 2, "messages": 8, "size_bytes": 500}  # fmt: skip


def test_topic_configs_mark_overrides() -> None:
    rows = data.topic_configs({"retention.ms": "1000"}, {"retention.ms": "1000", "cleanup.policy": "delete"})
    assert rows == [{"name": "cleanup.policy", "value": "delete", "source": "default"},
                    {"name": "retention.ms", "value": "1000", "source": "topic"}]  # fmt: skip


def test_lag_rows_and_group_summary() -> None:
    rows = data.lag_rows(
        {("t", 0): 3, ("t", 1): 9}, {("t", 0): 10, ("t", 1): 5, ("t", 2): 7}, {("t", 0): "m1", ("t", 2): "m2"}
    )
    assert rows == [
        {"topic": "t", "partition": 0, "committed": 3, "high_watermark": 10, "lag": 7, "member_id": "m1"},
        {"topic": "t", "partition": 1, "committed": 9, "high_watermark": 5, "lag": 0, "member_id": None},
        {"topic": "t", "partition": 2, "committed": None, "high_watermark": 7, "lag": None, "member_id": "m2"},
    ]
    summary = data.group_summary("g", "classic", "Stable", [{}, {}], rows)
    assert summary == {"group": "g", "type": "classic", "state": "Stable", "members": 2, "total_lag": 7}
    assert data.group_summary("g", "consumer", "Empty", [], [])["total_lag"] is None


@dataclass
class Share:
    start_offset: int
    end_offset: int
    in_flight: int


def test_share_partition_row() -> None:
    row = data.share_partition_row("q", 0, Share(4, 6, 2), 10)
    assert row == {"topic": "q", "partition": 0, "start_offset": 4, "end_offset": 6, "in_flight": 2,
                   "high_watermark": 10, "backlog": 4}  # fmt: skip
    assert data.share_partition_row("q", 1, Share(0, 0, 0), None)["backlog"] is None


def test_messages_from_batches_byte_budget() -> None:
    big = [Record(i, 0, None, b"x" * 600, []) for i in range(4)]
    page, after = data.messages_from_batches("t", 0, [Batch(big, 4)], 0, 4, 10, budget=1000)
    assert [m["offset"] for m in page] == [0] and after == 1  # the second would pass the budget
    page, after = data.messages_from_batches("t", 0, [Batch(big, 4)], 0, 4, 10, budget=100)
    assert [m["offset"] for m in page] == [0] and after == 1  # the first always goes
    huge = Record(0, 0, b"k", b"y" * (data.MAX_SHOWN_BYTES * 2), [Header("h", None)])
    assert data.shown_bytes(huge) == 1 + data.MAX_SHOWN_BYTES
    assert data.message_shown_bytes(data.message("t", 0, huge)) == 1 + data.MAX_SHOWN_BYTES


def test_queue_records_show_due_time_and_tag_and_stay_bounded() -> None:
    from kbroker.vq.records import QueueRecord

    delayed = QueueRecord(
        7, 1_000, b'{"job": 1}', (Header("kbroker-deliver-after-ms", b"60000"), Header("kbroker-tag", b"urgent"))
    )
    shaped = data.queue_record(delayed)
    assert (shaped["offset"], shaped["timestamp"], shaped["due_at"], shaped["tag"]) == (7, 1_000, 61_000, "urgent")
    assert json.loads(shaped["value"]["json"]) == {"job": 1}
    assert [h["key"] for h in shaped["headers"]] == ["kbroker-deliver-after-ms", "kbroker-tag"]
    big = [QueueRecord(i, 0, b"z" * data.MAX_SHOWN_BYTES * 2, ()) for i in range(100)]
    page = data.queue_records_page(big)  # each shows MAX_SHOWN_BYTES: the page stops at MAX_PAGE_BYTES
    assert len(page) == data.MAX_PAGE_BYTES // data.MAX_SHOWN_BYTES and page[0]["value"]["truncated"]
    huge = QueueRecord(0, 0, None, tuple(Header(f"h{i}", b"y" * data.MAX_SHOWN_BYTES) for i in range(70)))
    assert len(data.queue_records_page([huge, delayed])) == 1  # the first always shows, alone when over budget
