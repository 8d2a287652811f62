import pytest

from kbroker.log.index import IndexCorruptError, OffsetIndex, TimeIndex, write_index_file


def _write(index):
    position, data = index.pending()
    write_index_file(index.path, position, data, fsync=False)
    index.mark_written(len(index))


def test_offset_index_lookup(tmp_path):
    index = OffsetIndex(tmp_path / "0.index", 100, 1024)
    assert index.lookup(150) == (100, 0)
    index.append(110, 4096)
    index.append(130, 8200)
    assert index.lookup(109) == (100, 0)
    assert index.lookup(110) == (110, 4096)
    assert index.lookup(129) == (110, 4096)
    assert index.lookup(10**12) == (130, 8200)
    assert index.floor_position(8199) == 4096
    assert index.floor_position(8200) == 8200
    assert index.floor_position(10) == 0
    with pytest.raises(ValueError):
        index.append(130, 9000)


def test_offset_index_file_round_trip_and_appends(tmp_path):
    index = OffsetIndex(tmp_path / "0.index", 100, 1024)
    index.append(110, 4096)
    _write(index)
    index.append(130, 8200)
    _write(index)
    assert (tmp_path / "0.index").stat().st_size == 16
    loaded = OffsetIndex(tmp_path / "0.index", 100, 1024)
    loaded.load(log_size=9000)
    assert list(loaded.offsets) == [10, 30] and list(loaded.positions) == [4096, 8200]
    assert loaded.written == 2


@pytest.mark.parametrize(
    "data",
    [
        b"\x00" * 7,  # not a whole entry
        bytes.fromhex("0000000a000010000000000500002000"),  # offsets decrease
        bytes.fromhex("0000000a000010000000000b00001000"),  # positions repeat
        bytes.fromhex("0000000a00ffffff"),  # position beyond the log
    ],
)
def test_offset_index_sanity_check(tmp_path, data):
    (tmp_path / "0.index").write_bytes(data)
    with pytest.raises(IndexCorruptError):
        OffsetIndex(tmp_path / "0.index", 0, 1024).load(log_size=10_000)


def test_missing_index_is_corrupt(tmp_path):
    with pytest.raises(IndexCorruptError):
        OffsetIndex(tmp_path / "0.index", 0, 1024).load(log_size=0)


def test_time_index(tmp_path):
    index = TimeIndex(tmp_path / "0.timeindex", 50, 1200)
    assert index.last_entry() is None
    assert index.lookup_below(5) == 50
    index.maybe_append(1000, 60)
    index.maybe_append(1000, 70)  # not above the last timestamp: skipped
    index.maybe_append(900, 75)
    index.maybe_append(2000, 80)
    assert len(index) == 2
    assert index.lookup_below(1000) == 50
    assert index.lookup_below(1001) == 60
    assert index.lookup_below(5000) == 80
    _write(index)
    loaded = TimeIndex(tmp_path / "0.timeindex", 50, 1200)
    loaded.load(next_offset_bound=100)
    assert loaded.last_entry() == (2000, 80)
    with pytest.raises(IndexCorruptError):
        TimeIndex(tmp_path / "0.timeindex", 50, 1200).load(next_offset_bound=80)


def test_full_index(tmp_path):
    index = OffsetIndex(tmp_path / "0.index", 0, 16)
    index.append(1, 10)
    assert not index.is_full
    index.append(2, 20)
    assert index.is_full


def test_rewrite_after_reset_cuts_the_file(tmp_path):
    index = OffsetIndex(tmp_path / "0.index", 0, 1024)
    for i in range(1, 5):
        index.append(i, i * 10)
    _write(index)
    index.reset()
    index.append(7, 70)
    _write(index)
    assert (tmp_path / "0.index").read_bytes() == bytes.fromhex("0000000700000046")
