"""Why kbroker accepts, without acting on them, the Apache Kafka broker configs it does not declare itself.

kbroker/kafka_configs.py lists every config Kafka's broker reports; kbroker/config_defs.py declares those
kbroker acts on and turns each other one into an accepted-but-ignored property with Kafka's type and
default, whose note is the reason given here. Rules are tried in order: an exact name, then a prefix.
"""

from __future__ import annotations

KRAFT = "kbroker has no KRaft controller or metadata log (a cluster coordinates through ZooKeeper)"
REPLICATION = (
    "kbroker's replication does not use it: one fetcher task per source broker, no replication quotas or throttles"
)
BROKER_IDS = "broker ids are configured (node.id or broker.id), never generated"
TIERED = "tiered storage (KIP-405) is not offered"
THREADS = "kbroker runs one event loop (and one cleaner thread), so thread counts do not apply"
PURGATORY = "kbroker keeps no request purgatories to purge: waiting requests are futures, dropped when answered"
TLS = (
    "kbroker's TLS (Python's ssl module, PEM files) has no Java keystores, key or trust manager algorithms, "
    "providers or secure random implementations"
)
SASL = "kbroker offers SASL PLAIN and SCRAM with its own credential stores: no Kerberos, OAUTHBEARER or login modules"
PLUGGABLE = "Java plug-in classes cannot be loaded into kbroker"
METRICS = "kbroker's metrics are served in Prometheus form on its HTTP listener (/metrics), not through reporters"
TOKENS = "delegation tokens are not offered"
PASSWORDS = "kbroker stores no dynamic passwords to encrypt"
COORDINATOR = (
    "kbroker's coordinators write to their internal topics directly, with no batching linger, load buffer or "
    "write timeout"
)
INTERNAL_TOPIC = (
    "kbroker creates its internal topics with fixed settings (compacted, 100 MiB segments, uncompressed batches)"
)
SHUTDOWN = "one node shuts down without handing partition leadership over to other brokers"
FEATURES = "kbroker offers the features and API versions it implements, with no unstable ones to enable"
LOG_DIRS = (
    "kbroker serves every log directory from the start and stops on a failed directory instead of taking it offline"
)
CLIENT_TELEMETRY = "client telemetry (KIP-714) is not collected"
CONNECTION_RATE = "kbroker limits connections by count (max.connections, max.connections.per.ip), not by rate"
REQUEST_QUEUE = "kbroker bounds requests in flight by bytes (queued.max.request.bytes), not by count"
FETCH_SESSIONS = (
    "kbroker answers full fetches only (no incremental fetch sessions, KIP-227), so it keeps no session slots"
)
SHARE_LIMITS = "kbroker's share groups have no limit on the number of groups or on records per fetch"
GROUP_PROTOCOLS = "kbroker's group coordinator always offers the classic, consumer and share group protocols"
REGEX_REFRESH = "kbroker re-reads regex subscriptions against the topics at most once a second at a heartbeat"
ASSIGNMENT_INTERVAL = "kbroker computes a new target assignment at the heartbeat after a change, with no batching"
TXN_VERIFICATION = "kbroker always verifies a transactional produce against its coordinator (KIP-890), with no switch"
CLEANER_IO = "kbroker's cleaner reads and writes in 1 MiB chunks"
LOG_TASK_DELAY = "kbroker starts its log tasks (retention, flush, checkpoints) with no initial delay"
REPLICA_SELECTOR = "consumers always fetch from the leader (no follower fetching, KIP-392)"
TWO_PHASE = "two-phase-commit transactions (KIP-939) are not offered"
STREAMS_GROUPS = "Streams groups (KIP-1071) are not implemented"
OFFSETS_RETENTION = "kbroker reads offsets and group state without a load buffer"
TXN_RETRY = "kbroker adds partitions to transactions on the broker itself, with nothing to retry"
OUTBOUND = "kbroker's requests to other brokers (replica fetches, markers) use their own timeouts, not these"
SHARE_ASSIGNMENT = "kbroker assigns share-group partitions at each heartbeat with its own simple assignor"
CORDONED = "kbroker places new partitions in every log directory (no cordoning, KIP-1066)"
START_OFFSET_CHECKPOINT = (
    "kbroker writes the log start offsets with the recovery points, every log.flush.offset.checkpoint.interval.ms"
)

_EXACT: dict[str, str] = {
    "alter.config.policy.class.name": PLUGGABLE,
    "create.topic.policy.class.name": PLUGGABLE,
    "client.quota.callback.class": PLUGGABLE,
    "principal.builder.class": "principals are User:<name> from SASL, or the client certificate's subject",
    "ssl.principal.mapping.rules": "a TLS client's principal is its certificate's whole subject (Kafka's DEFAULT rule)",
    "ssl.cipher.suites": "kbroker's TLS uses the cipher suites of Python's ssl module (OpenSSL's defaults)",
    "ssl.protocol": "kbroker's TLS negotiates the versions in ssl.enabled.protocols with Python's ssl module",
    "sasl.server.callback.handler.class": PLUGGABLE,
    "sasl.mechanism.controller.protocol": KRAFT,
    "control.plane.listener.name": KRAFT,
    "early.start.listeners": KRAFT,
    "eligible.leader.replicas.enable": KRAFT,
    "server.max.startup.time.ms": KRAFT,
    "node.id": KRAFT,
    "reserved.broker.max.id": BROKER_IDS,
    "broker.id.generation.enable": BROKER_IDS,
    "background.threads": THREADS,
    "queued.max.requests": REQUEST_QUEUE,
    "max.connection.creation.rate": CONNECTION_RATE,
    "max.incremental.fetch.session.cache.slots": FETCH_SESSIONS,
    "telemetry.max.bytes": CLIENT_TELEMETRY,
    "unstable.api.versions.enable": FEATURES,
    "unstable.feature.versions.enable": FEATURES,
    "inter.broker.protocol.version": FEATURES,
    "log.dir.failure.timeout.ms": LOG_DIRS,
    "log.initial.task.delay.ms": LOG_TASK_DELAY,
    "log.cleaner.io.buffer.size": CLEANER_IO,
    "transaction.partition.verification.enable": TXN_VERIFICATION,
    "transaction.two.phase.commit.enable": TWO_PHASE,
    "replica.selector.class": REPLICA_SELECTOR,
    "group.coordinator.rebalance.protocols": GROUP_PROTOCOLS,
    "group.coordinator.new.enable": GROUP_PROTOCOLS,
    "group.share.enable": GROUP_PROTOCOLS,
    "group.consumer.regex.refresh.interval.ms": REGEX_REFRESH,
    "group.consumer.assignment.interval.ms": ASSIGNMENT_INTERVAL,
    "group.consumer.min.assignment.interval.ms": ASSIGNMENT_INTERVAL,
    "group.consumer.max.assignment.interval.ms": ASSIGNMENT_INTERVAL,
    "group.share.assignment.interval.ms": SHARE_ASSIGNMENT,
    "group.share.min.assignment.interval.ms": SHARE_ASSIGNMENT,
    "group.share.max.assignment.interval.ms": SHARE_ASSIGNMENT,
    "group.share.assignors": SHARE_ASSIGNMENT,
    "group.share.max.share.sessions": SHARE_LIMITS,
    "group.coordinator.background.threads": THREADS,
    "group.coordinator.cached.buffer.max.bytes": COORDINATOR,
    "share.coordinator.cached.buffer.max.bytes": COORDINATOR,
    "add.partitions.to.txn.retry.backoff.ms": TXN_RETRY,
    "add.partitions.to.txn.retry.backoff.max.ms": TXN_RETRY,
    "request.timeout.ms": OUTBOUND,
    "socket.connection.setup.timeout.ms": OUTBOUND,
    "socket.connection.setup.timeout.max.ms": OUTBOUND,
    "cordoned.log.dirs": CORDONED,
    "follower.fetch.last.tiered.offset.enable": TIERED,
    "log.flush.start.offset.checkpoint.interval.ms": START_OFFSET_CHECKPOINT,
    "group.share.max.groups": SHARE_LIMITS,
    "share.fetch.max.fetch.records": SHARE_LIMITS,
    "offsets.load.buffer.size": OFFSETS_RETENTION,
    "transaction.state.log.load.buffer.size": OFFSETS_RETENTION,
    "share.coordinator.load.buffer.size": OFFSETS_RETENTION,
    "offsets.commit.timeout.ms": COORDINATOR,
    "offsets.topic.compression.codec": INTERNAL_TOPIC,
    "offsets.topic.segment.bytes": INTERNAL_TOPIC,
    "transaction.state.log.segment.bytes": INTERNAL_TOPIC,
    "share.coordinator.state.topic.compression.codec": INTERNAL_TOPIC,
    "share.coordinator.state.topic.segment.bytes": INTERNAL_TOPIC,
}

_PREFIXES: tuple[tuple[str, str], ...] = (
    ("controller.", KRAFT),
    ("metadata.", KRAFT),
    ("broker.heartbeat.", KRAFT),
    ("broker.session.", KRAFT),
    ("initial.broker.registration.", KRAFT),
    ("process.roles", KRAFT),
    ("zookeeper.metadata.migration.", KRAFT),
    ("controlled.shutdown.", SHUTDOWN),
    ("remote.", TIERED),
    ("log.local.retention.", TIERED),
    ("replica.", REPLICATION),
    ("num.replica.", REPLICATION),
    ("leader.imbalance.", REPLICATION),
    ("leader.replication.", REPLICATION),
    ("follower.replication.", REPLICATION),
    ("replication.quota.", REPLICATION),
    ("alter.log.dirs.replication.quota.", REPLICATION),
    ("unclean.leader.election.interval.", REPLICATION),
    ("num.", THREADS),
    ("group.coordinator.threads", THREADS),
    ("share.coordinator.threads", THREADS),
    ("group.coordinator.append.", COORDINATOR),
    ("share.coordinator.append.", COORDINATOR),
    ("share.coordinator.write.", COORDINATOR),
    ("share.coordinator.snapshot.", COORDINATOR),
    ("group.streams.", STREAMS_GROUPS),
    ("fetch.purgatory.", PURGATORY),
    ("producer.purgatory.", PURGATORY),
    ("delete.records.purgatory.", PURGATORY),
    ("share.fetch.purgatory.", PURGATORY),
    ("remote.fetch.", TIERED),
    ("ssl.", TLS),
    ("security.providers", TLS),
    ("sasl.", SASL),
    ("delegation.token.", TOKENS),
    ("password.encoder.", PASSWORDS),
    ("metric.", METRICS),
    ("metrics.", METRICS),
    ("kafka.metrics.", METRICS),
    ("auto.include.jmx.reporter", METRICS),
    ("config.providers", PLUGGABLE),
)


def reason_ignored(name: str) -> str | None:
    """Why kbroker does not act on Kafka's broker config `name`; None when no rule covers it."""
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    return next((reason for prefix, reason in _PREFIXES if name.startswith(prefix)), None)
