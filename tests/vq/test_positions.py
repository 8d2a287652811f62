"""Named consumers' positions: the ack rules and the positions topic's records."""

from __future__ import annotations

import pytest

from kbroker.vq.positions import (
    AckOutOfRange,
    Positions,
    StaleAck,
    check_name,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def test_ack_moves_forwards_and_refuses_a_stale_ack() -> None:
    positions = Positions()
    assert positions.get("q", "c") is None
    first = positions.ack("q", "c", 5, allow_rewind=False, log_end=10)
    assert (first.previous, first.position) == (None, 5)
    assert positions.ack("q", "c", 5, allow_rewind=False, log_end=10).position == 5  # the same: fine
    with pytest.raises(StaleAck) as stale:
        positions.ack("q", "c", 4, allow_rewind=False, log_end=10)
    assert stale.value.position == 5 and positions.get("q", "c") == 5
    rewound = positions.ack("q", "c", 1, allow_rewind=True, log_end=10)
    assert (rewound.previous, rewound.position) == (5, 1)
    assert positions.ack("q", "c", 10, allow_rewind=False, log_end=10).position == 10


def test_ack_stays_within_the_log() -> None:
    positions = Positions()
    with pytest.raises(AckOutOfRange):
        positions.ack("q", "c", 11, allow_rewind=False, log_end=10)
    with pytest.raises(AckOutOfRange):
        positions.ack("q", "c", -1, allow_rewind=True, log_end=10)
    assert positions.get("q", "c") is None


def test_consumers_are_independent_and_deleted_with_their_queue() -> None:
    positions = Positions()
    positions.ack("q", "a", 3, allow_rewind=False, log_end=10)
    positions.ack("q", "b", 7, allow_rewind=False, log_end=10)
    positions.ack("r", "a", 1, allow_rewind=False, log_end=10)
    assert positions.consumers("q") == {"a": 3, "b": 7}
    assert positions.remove("q", "a") and not positions.remove("q", "a")
    assert sorted(positions.remove_queue("q")) == ["b"]
    assert positions.consumers("q") == {} and positions.get("r", "a") == 1


def test_records_round_trip_and_replay() -> None:
    key = encode_key("jobs/ü", "worker-1")
    assert decode_key(key) == ("jobs/ü", "worker-1")
    assert decode_value(encode_value(42, 1_700_000_000_000)) == 42
    positions = Positions()
    positions.replay(key, encode_value(9, 0))
    assert positions.get("jobs/ü", "worker-1") == 9
    positions.replay(key, None)  # a tombstone
    assert positions.get("jobs/ü", "worker-1") is None
    for bad in (b"", b"\x00\x01" + key[2:], key + b"x"):
        with pytest.raises(ValueError):
            decode_key(bad)
    with pytest.raises(ValueError):
        decode_value(b"\x00")


def test_names() -> None:
    assert check_name("queue", "orders-42.eu") is None
    assert check_name("queue", "") is not None
    assert check_name("queue", "x" * 250) is not None
    assert check_name("consumer", "a\nb") is not None
    assert check_name("consumer", "\udc80") is not None
