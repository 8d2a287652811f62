"""One module per Kafka API; each declares its version range with @handles."""
