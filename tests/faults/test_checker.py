"""The fault runs' queue checker on hand-made histories: each finding, and what must not be one."""

from __future__ import annotations

import pytest

from scripts.faults.checker import Attempt, Outcome, Read, check

ACK, FAILED, UNKNOWN, NO_ANSWER = Outcome.ACKNOWLEDGED, Outcome.FAILED, Outcome.INDETERMINATE, Outcome.ATTEMPTED


def attempts(*specs: tuple[str, int, Outcome], producer: str = "p") -> list[Attempt]:
    return [Attempt(v, producer, part, seq, outcome, None) for seq, (v, part, outcome) in enumerate(specs)]


def log(partition: int, *values: str, start: int = 0) -> list[Read]:
    return [Read(partition, start + i, v) for i, v in enumerate(values)]


def test_a_clean_run_is_valid() -> None:
    history = attempts(("a", 0, ACK), ("b", 1, ACK), ("c", 0, ACK))
    report = check(history, log(0, "a", "c") + log(1, "b"))
    assert report.valid
    assert report.counts()["acknowledged"] == 3 and report.counts()["read"] == 3
    assert report.errors() == dict.fromkeys(report.errors(), 0)
    assert "valid" in report.render()


def test_lost_acknowledged_value() -> None:
    report = check(attempts(("a", 0, ACK), ("b", 0, ACK)), log(0, "a"))
    assert report.lost == ["b"] and not report.valid
    assert "INVALID: lost 1" in report.render()


def test_a_value_read_twice_is_duplicated() -> None:
    report = check(attempts(("a", 0, ACK), ("b", 0, ACK)), log(0, "a", "b", "a"))
    assert report.duplicated == {"a": 2} and report.errors()["duplicated"] == 1
    assert report.errors()["reordered"] == 0  # the duplicate's first place counts for the order


def test_duplicates_across_partitions_count_too() -> None:
    report = check(attempts(("a", 0, ACK)), log(0, "a") + log(1, "a"))
    assert report.duplicated == {"a": 2}


def test_reordered_within_one_producer_and_partition() -> None:
    history = attempts(("a", 0, ACK), ("b", 0, ACK), ("c", 0, ACK), ("d", 1, ACK))
    report = check(history, log(0, "b", "a", "c") + log(1, "d"))
    assert report.errors()["reordered"] == 1
    assert list(report.reordered) == [(0, "p")]
    assert "a (sent #0) after b" in report.reordered[(0, "p")][0]


def test_order_is_per_producer_interleaving_is_fine() -> None:
    history = attempts(("a1", 0, ACK), ("a2", 0, ACK), producer="a") + attempts(
        ("b1", 0, ACK), ("b2", 0, ACK), producer="b"
    )
    report = check(history, log(0, "b1", "a1", "b2", "a2"))
    assert report.valid


def test_unacknowledged_values_between_do_not_make_a_reordering() -> None:
    history = attempts(("a", 0, ACK), ("x", 0, UNKNOWN), ("b", 0, ACK))
    report = check(history, log(0, "a", "b", "x"))  # a retried write landing later is allowed
    assert report.valid and report.recovered == 1


def test_read_order_is_by_offset_not_by_arrival() -> None:
    history = attempts(("a", 0, ACK), ("b", 0, ACK))
    reads = [Read(0, 7, "b"), Read(0, 3, "a")]
    assert check(history, reads).valid


def test_unexpected_value() -> None:
    report = check(attempts(("a", 0, ACK)), log(0, "a", "zzz"))
    assert report.unexpected == ["zzz"] and not report.valid


def test_indeterminate_outcomes_read_are_recovered_and_unread_are_unresolved() -> None:
    history = attempts(("a", 0, ACK), ("b", 0, UNKNOWN), ("c", 0, NO_ANSWER), ("d", 1, UNKNOWN))
    report = check(history, log(0, "a", "b", "c"))
    assert report.valid
    assert (report.recovered, report.unresolved, report.indeterminate) == (2, 1, 3)


def test_a_definite_failure_that_was_written_is_an_error() -> None:
    report = check(attempts(("a", 0, FAILED), ("b", 0, FAILED)), log(0, "a"))
    assert report.failed_but_read == ["a"] and report.failed == 2 and not report.valid
    assert report.unresolved == 0  # "b" failed as the client was told


def test_misplaced_acknowledged_value() -> None:
    report = check(attempts(("a", 0, ACK)), log(1, "a"))
    assert report.misplaced == {"a": (0, [1])} and report.lost == [] and not report.valid


def test_reported_offsets_are_not_judged() -> None:
    # the idempotent producer may report another offset for a batch it retried: only counted
    history = [Attempt("a", "p", 0, 0, ACK, 0), Attempt("b", "p", 0, 1, ACK, 1)]
    report = check(history, log(0, "a", "b", start=5))
    assert report.valid and report.offset_differs == 2


def test_values_must_be_unique() -> None:
    with pytest.raises(ValueError, match="attempted twice"):
        check(attempts(("a", 0, ACK), ("a", 1, ACK)), [])


def test_empty_run() -> None:
    report = check([], [])
    assert report.valid and report.counts()["attempted"] == 0
