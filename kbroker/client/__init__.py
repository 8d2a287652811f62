"""A small synchronous Kafka client on the project's own codec, for the `kbroker` command line.

`connection` speaks the protocol over one socket (ApiVersions negotiation, framing, correlation ids);
`cluster` bootstraps, keeps the metadata and finds leaders and coordinators, retrying Kafka's retriable
errors; `admin`, `produce`, `consume`, `groups` and `share_groups` are the operations the command line needs.
Nothing here imports asyncio or a Kafka client library.
"""
