"""The topics Kafka calls internal (Topic.isInternal): written by their coordinators only, reported with
`is_internal` in Metadata and DescribeTopicPartitions, never auto-created by a client's Metadata request."""

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
