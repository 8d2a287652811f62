import pytest

from kbroker.log.config import LONG_MAX, LogConfig, to_properties
from kbroker.log.errors import InvalidConfigError


def test_defaults_are_kafkas():
    config = LogConfig()
    assert config.segment_bytes == 1 << 30
    assert config.segment_ms == 604_800_000
    assert config.retention_ms == 1_209_600_000
    assert config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10 * 1024 * 1024
    assert config.flush_messages == LONG_MAX and config.flush_ms == LONG_MAX
    assert config.max_message_bytes == 1048588
    assert config.message_timestamp_type == "CreateTime"
    assert config.cleanup_policy == "delete"
    assert config.fsync_before_ack is False


def test_from_properties_parses_kafka_names():
    config = LogConfig.from_properties(
        {
            "retention.ms": "123",
            "segment.bytes": 4096,
            "kbroker.fsync.before.ack": "TRUE",
            "message.timestamp.type": "LogAppendTime",
            "cleanup.policy": "compact, delete",
            "min.insync.replicas": "2",  # known to Kafka, not used by the log
        }
    )
    assert config.retention_ms == 123
    assert config.segment_bytes == 4096
    assert config.fsync_before_ack is True
    assert config.log_append_time
    assert config.cleanup_policy == "compact,delete" and config.delete_enabled


def test_from_properties_keeps_the_base():
    base = LogConfig(retention_ms=5)
    assert LogConfig.from_properties({"segment.ms": "9"}, base) == LogConfig(retention_ms=5, segment_ms=9)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("retention.ms", "ten", "for retention.ms: expected an integer"),
        ("retention.ms", "-2", "invalid value -2 for retention.ms"),
        ("segment.bytes", "10", "invalid value 10 for segment.bytes"),
        ("segment.bytes", str(1 << 40), "for segment.bytes: out of range"),
        ("flush.messages", "0", "invalid value 0 for flush.messages"),
        ("kbroker.fsync.before.ack", "yes", "expected true or false"),
        ("message.timestamp.type", "Now", "must be one of \\[CreateTime, LogAppendTime\\]"),
        ("cleanup.policy", "keep", "invalid value 'keep' for cleanup.policy"),
        ("retention.minutes", "1", "unknown topic config name"),
    ],
)
def test_bad_values_name_the_property(name, value, message):
    with pytest.raises(InvalidConfigError, match=message):
        LogConfig.from_properties({name: value})


def test_to_properties_round_trips():
    config = LogConfig(retention_bytes=77, fsync_before_ack=True, message_timestamp_type="LogAppendTime")
    properties = to_properties(config)
    assert properties["kbroker.fsync.before.ack"] == "true"
    assert LogConfig.from_properties(properties) == config
