"""BatchCache: decoded batches, least recently used out first, bounded by their records."""

from __future__ import annotations

from kbroker.vq.batch_cache import CACHE_MIN_RECORDS, BatchCache, DecodedBatch


def batch(base: int, count: int) -> DecodedBatch[str]:
    offsets = list(range(base, base + 2 * count, 2))  # not dense: a gap at every other offset
    return DecodedBatch(offsets, [f"r{o}" for o in offsets])


def test_lookup_inside_a_batch() -> None:
    decoded = batch(100, 20)
    assert decoded.get(100) == "r100" and decoded.get(138) == "r138"
    assert decoded.get(101) is None and decoded.get(140) is None and decoded.get(0) is None


def test_least_recently_used_goes_first() -> None:
    cache: BatchCache[str] = BatchCache(max_records=50)
    for base in (0, 1000):
        cache.put((b"t", 0, base), batch(base, 20))
    assert cache.get((b"t", 0, 0)) is not None  # now the most recently used
    cache.put((b"t", 0, 2000), batch(2000, 20))  # 60 records > 50: the least recently used goes
    assert cache.get((b"t", 0, 1000)) is None
    assert cache.get((b"t", 0, 0)) is not None and cache.get((b"t", 0, 2000)) is not None
    assert cache.records == 40


def test_small_batches_are_not_kept_and_a_large_one_alone() -> None:
    cache: BatchCache[str] = BatchCache(max_records=50)
    cache.put((b"t", 0, 0), batch(0, CACHE_MIN_RECORDS - 1))
    assert cache.get((b"t", 0, 0)) is None
    cache.put((b"t", 0, 100), batch(100, 20))
    cache.put((b"t", 1, 0), batch(0, 80))  # larger than the bound: kept alone
    assert cache.get((b"t", 0, 100)) is None and cache.get((b"t", 1, 0)) is not None
    assert cache.records == 80
    cache.put((b"u", 1, 0), batch(0, 20))  # another topic id: another key; the large one goes
    assert cache.get((b"t", 1, 0)) is None and cache.records == 20
