import uuid

import pytest

from kbroker.log.checkpoint import read_checkpoint, write_atomically, write_checkpoint
from kbroker.log.errors import InvalidTopicError
from kbroker.log.metadata import TopicMetadata, validate_topic_name


def test_checkpoint_round_trip(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_checkpoint(path, {("b", 1): 7, ("a", 0): 12})
    assert path.read_text() == "0\n2\na 0 12\nb 1 7\n"
    assert read_checkpoint(path) == {("a", 0): 12, ("b", 1): 7}
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na b c\n", "0\nx\n"])
def test_unreadable_checkpoint_is_empty(tmp_path, text):
    path = tmp_path / "checkpoint"
    path.write_text(text)
    assert read_checkpoint(path) == {}


def test_missing_checkpoint_is_empty(tmp_path):
    assert read_checkpoint(tmp_path / "nope") == {}


def test_write_atomically_replaces(tmp_path):
    path = tmp_path / "f"
    write_atomically(path, b"one")
    write_atomically(path, b"two")
    assert path.read_bytes() == b"two" and [p.name for p in tmp_path.iterdir()] == ["f"]


def test_topic_metadata_json():
    metadata = TopicMetadata("orders", uuid.uuid4(), 3, {"retention.ms": "5"})
    assert TopicMetadata.from_json(metadata.to_json()) == metadata
    with pytest.raises(ValueError):
        TopicMetadata.from_json(metadata.to_json().replace(b'"version": 1', b'"version": 9'))


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "x" * 249])
def test_legal_topic_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a b", "a/b", "ä", "a\n"])
def test_illegal_topic_names(name):
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)
