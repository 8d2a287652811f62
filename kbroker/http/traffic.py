"""Bytes and records appended per topic, from the logs' on_append event (every writer: clients,
coordinators, the REST produce path)."""

from __future__ import annotations

from typing import Any


class TopicTraffic:
    __slots__ = ("bytes_in", "records_in")

    def __init__(self) -> None:
        self.bytes_in: dict[str, int] = {}
        self.records_in: dict[str, int] = {}

    def on_append(self, log: Any, info: Any, size: int) -> None:
        topic = log.topic
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size
        self.records_in[topic] = self.records_in.get(topic, 0) + (info.last_offset - info.base_offset + 1)

    def forget(self, topics: set[str]) -> None:
        for topic in [t for t in self.bytes_in if t not in topics]:
            self.bytes_in.pop(topic, None)
            self.records_in.pop(topic, None)
