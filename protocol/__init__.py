"""The Kafka wire protocol as data: schemas, one codec, headers, framing, record batches. No I/O."""
