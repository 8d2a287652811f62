"""Producer ids come from persisted blocks and are never issued twice, across restarts too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbroker.log import KafkaStorageError
from kbroker.txn.producer_ids import BLOCK_FILE, ProducerIdManager


def test_ids_are_dense_within_a_block_and_the_block_is_on_disk_first(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path, block_size=10)
    assert not (tmp_path / BLOCK_FILE).exists()
    assert [manager.generate() for _ in range(3)] == [0, 1, 2]
    assert json.loads((tmp_path / BLOCK_FILE).read_text()) == {"version": 1, "block_start": 0, "block_end": 9}
    assert [manager.generate() for _ in range(8)][-1] == 10
    assert json.loads((tmp_path / BLOCK_FILE).read_text())["block_end"] == 19


def test_restart_skips_the_rest_of_the_block(tmp_path: Path) -> None:
    first = ProducerIdManager(tmp_path, block_size=10)
    issued = {first.generate() for _ in range(4)}
    second = ProducerIdManager(tmp_path, block_size=10)
    again = [second.generate() for _ in range(12)]
    assert again[0] == 10 and not issued & set(again) and len(set(again)) == 12
    third = ProducerIdManager(tmp_path)
    assert third.generate() == 30


def test_unreadable_block_file_refuses_to_guess(tmp_path: Path) -> None:
    (tmp_path / BLOCK_FILE).write_text("{not json")
    with pytest.raises(KafkaStorageError):
        ProducerIdManager(tmp_path)
    (tmp_path / BLOCK_FILE).write_text('{"version": 7, "block_end": 3}')
    with pytest.raises(KafkaStorageError):
        ProducerIdManager(tmp_path)


def test_block_that_cannot_be_written_is_a_storage_error(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path / "missing-dir")
    with pytest.raises(KafkaStorageError):
        manager.generate()
