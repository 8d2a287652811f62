"""The error table against Kafka's facts and against kafka-python's `kafka.errors` (a second implementation)."""

import pytest
from kafka import errors as kp_errors

from protocol.errors import ErrorCode, ErrorInfo, KafkaProtocolError, error_info

# Where kafka-python disagrees with Kafka's own Errors.java, we follow Kafka. Each entry is
# code: (kafka-python's name, kafka-python's retriable flag, why we differ).
KNOWN_DIFFERENCES = {
    -1: ("UNKNOWN", False, "Kafka names it UNKNOWN_SERVER_ERROR"),
    0: ("NO_ERROR", False, "Kafka names it NONE"),
    2: ("CORRUPT_MESSAGE", False, "Java's CorruptRecordException is a RetriableException"),
    6: ("NOT_LEADER_FOR_PARTITION", True, "Kafka renamed it NOT_LEADER_OR_FOLLOWER"),
    10: ("MESSAGE_SIZE_TOO_LARGE", False, "Kafka names it MESSAGE_TOO_LARGE"),
    17: ("INVALID_TOPIC", False, "Kafka names it INVALID_TOPIC_EXCEPTION"),
    39: ("INVALID_REPLICATION_ASSIGNMENT", False, "Kafka names it INVALID_REPLICA_ASSIGNMENT"),
}


def _kafka_python_codes() -> dict[int, tuple[str, bool]]:
    return {code: (cls.message, cls.retriable) for code, cls in kp_errors.kafka_errors.items() if code is not None}


def test_sample_of_codes() -> None:
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.NONE == 0
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert ErrorCode.NOT_COORDINATOR == 16
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.PRODUCER_FENCED == 90
    assert ErrorCode.TRANSACTION_ABORTABLE == 120
    assert ErrorCode.SHARE_SESSION_LIMIT_REACHED == 133


@pytest.mark.parametrize(
    ("code", "retriable"),
    [
        (ErrorCode.UNKNOWN_SERVER_ERROR, False),
        (ErrorCode.CORRUPT_MESSAGE, True),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, True),
        (ErrorCode.REQUEST_TIMED_OUT, True),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True),
        (ErrorCode.ILLEGAL_GENERATION, False),
        (ErrorCode.REBALANCE_IN_PROGRESS, False),
        (ErrorCode.CONCURRENT_TRANSACTIONS, True),
        (ErrorCode.INVALID_PRODUCER_EPOCH, False),
        (ErrorCode.UNKNOWN_PRODUCER_ID, False),
        (ErrorCode.UNSTABLE_OFFSET_COMMIT, True),
        (ErrorCode.TRANSACTION_ABORTABLE, False),
        (ErrorCode.SHARE_SESSION_LIMIT_REACHED, True),
    ],
)
def test_retriable_flags(code: ErrorCode, retriable: bool) -> None:
    assert code.retriable is retriable


def test_codes_are_contiguous_and_unaliased() -> None:
    codes = [int(member) for member in ErrorCode]
    assert codes == list(range(-1, 134))
    # An IntEnum silently turns a repeated value into an alias; every name must be its own code.
    assert len(ErrorCode.__members__) == len(codes)


def test_every_row_has_a_message() -> None:
    for member in ErrorCode:
        assert member.message and member.message.endswith("."), member.name


def test_agrees_with_kafka_python() -> None:
    theirs = _kafka_python_codes()
    shared = sorted(set(theirs) & {int(member) for member in ErrorCode})
    assert len(shared) > 100
    for code in shared:
        ours = ErrorCode(code)
        their_name, their_retriable = theirs[code]
        if code in KNOWN_DIFFERENCES:
            name, retriable, _why = KNOWN_DIFFERENCES[code]
            # The documented difference must still be real, or the entry is stale.
            assert (their_name, their_retriable) == (name, retriable), code
            assert (their_name, their_retriable) != (ours.name, ours.retriable), code
        else:
            assert (ours.name, ours.retriable) == (their_name, their_retriable), code


def test_error_info() -> None:
    assert error_info(3) == ErrorInfo(3, "UNKNOWN_TOPIC_OR_PARTITION", True, ErrorCode(3).message)
    assert error_info(ErrorCode.NONE).name == "NONE"
    with pytest.raises(ValueError):
        error_info(9999)


def test_kafka_protocol_error() -> None:
    default = KafkaProtocolError(ErrorCode.NOT_COORDINATOR)
    assert default.code is ErrorCode.NOT_COORDINATOR
    assert default.message == ErrorCode.NOT_COORDINATOR.message
    assert default.retriable
    assert "NOT_COORDINATOR (16)" in str(default)

    specific = KafkaProtocolError(22, "generation 4 is not 5")
    assert specific.code is ErrorCode.ILLEGAL_GENERATION
    assert specific.message == "generation 4 is not 5"
    assert not specific.retriable
    with pytest.raises(ValueError):
        KafkaProtocolError(9999)
