"""Scenario 6: ListOffsets earliest, latest and by timestamp (inside a batch, before the first, after the last)."""

from __future__ import annotations

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat, now_ms

COUNT = 10
STEP_MS = 100


def seeded_topic(compat: Compat, scenario: str) -> tuple[str, int]:
    """A one-partition topic with COUNT records STEP_MS apart, produced as one batch; its first timestamp."""
    topic = compat.setup_topic(scenario)
    base = now_ms() - 600_000
    # One produce call with linger: the ten records travel as one batch, so timestamp lookups land inside it.
    records = [Record(f"k{i}".encode(), f"v{i}".encode(), timestamp=base + STEP_MS * i) for i in range(COUNT)]
    offsets = compat.setup_produce(topic, records)
    assert [o for _, o in offsets] == list(range(COUNT))
    return topic, base


def test_list_offsets(compat: Compat) -> None:
    compat.need(ops=("list_offset",))
    topic, base = seeded_topic(compat, "offsets")
    lookup = lambda spec: compat.client.list_offset(compat.bootstrap, topic, 0, spec)  # noqa: E731
    assert lookup("earliest") == 0
    assert lookup("latest") == COUNT
    assert lookup(base - 1000) == 0
    assert lookup(base) == 0
    assert lookup(base + 5 * STEP_MS) == 5
    assert lookup(base + 5 * STEP_MS + 1) == 6, "first record with timestamp >= the one asked, inside the batch"
    assert lookup(base + (COUNT - 1) * STEP_MS) == COUNT - 1


def test_list_offsets_after_last_record(compat: Compat) -> None:
    compat.need(ops=("list_offset",), caps=("list_offsets.no_match",))
    topic, base = seeded_topic(compat, "offsets-after")
    assert compat.client.list_offset(compat.bootstrap, topic, 0, base + COUNT * STEP_MS) == -1
