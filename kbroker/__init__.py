"""kbroker: a Kafka-protocol broker over its own segmented log."""

__version__ = "0.1.0"
