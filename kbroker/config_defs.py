"""The configuration vocabulary: types, validators, and the tables of broker and topic properties.

Names, types, defaults and valid ranges are Apache Kafka's (3.9/4.x), so a `server.properties`
written for Kafka means the same here. Every difference is stated in a property's `note`.
Values are parsed from strings as Kafka parses them (trimmed; `true`/`false`; comma lists).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_BOUNDS = {"int": (-(2**31), INT_MAX), "short": (-(2**15), 2**15 - 1), "long": (-(2**63), LONG_MAX)}

Value = bool | int | float | str | tuple[str, ...]


class ConfigError(ValueError):
    """A configuration name or value is not acceptable; the message says why in one line."""


class ConfigType(IntEnum):
    """Property types, numbered as DescribeConfigs (v3+) reports them."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def label(self) -> str:
        return self.name.lower()


# The table's records are NamedTuples, not dataclasses: every start builds the table, and a frozen
# dataclass compiles its methods when its class is made (~0.5 ms each) and sets each field through
# object.__setattr__ (start-up time).


class Range(NamedTuple):
    """Numeric bounds, inclusive; `also` lists extra allowed values outside them (gzip's -1)."""

    low: float | None = None
    high: float | None = None
    also: tuple[int, ...] = ()

    def check(self, name: str, value: Value) -> None:
        assert isinstance(value, int | float) and not isinstance(value, bool)
        if value in self.also:
            return
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise ConfigError(f"invalid value {value} for {name}: must be in {self.describe()}")

    def describe(self) -> str:
        low = "..." if self.low is None else _num(self.low)
        high = "..." if self.high is None else _num(self.high)
        extra = "".join(f" or {v}" for v in self.also)
        return f"[{low},{high}]{extra}"


class OneOf(NamedTuple):
    """A string from a fixed set (exact case, as Kafka's ValidString)."""

    choices: tuple[str, ...]

    def check(self, name: str, value: Value) -> None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in self.choices:
                raise ConfigError(f"invalid value {item!r} for {name}: must be one of {self.describe()}")

    def describe(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


class ZooKeeperConnect:
    """HOST:PORT[,HOST:PORT...][/chroot], as ZooKeeper's connect strings are written."""

    __slots__ = ()

    def check(self, name: str, value: Value) -> None:
        assert isinstance(value, str)
        hosts, _, chroot = value.strip().partition("/")
        for server in hosts.split(","):
            host, colon, port = server.strip().rpartition(":")
            if not host or not colon or not port.isdigit() or not 0 < int(port) < 65536:
                raise ConfigError(f"invalid value {value!r} for {name}: expected HOST:PORT[,HOST:PORT...][/chroot]")
        if "//" in "/" + chroot or chroot.endswith("/") and chroot:
            raise ConfigError(f"invalid value {value!r} for {name}: the chroot must be a path like /kafka")

    def describe(self) -> str:
        return "HOST:PORT[,HOST:PORT...][/chroot]"


class ReplicaList:
    """`*`, or PARTITION:BROKER pairs separated by commas (the throttled-replica topic configs)."""

    __slots__ = ()

    def check(self, name: str, value: Value) -> None:
        items = value if isinstance(value, tuple) else (str(value),)
        if items == ("*",):
            return
        for item in items:
            partition, colon, broker = item.partition(":")
            if not (colon and partition.isdigit() and broker.isdigit()):
                raise ConfigError(f"invalid value {','.join(items)!r} for {name}: expected * or {self.describe()}")

    def describe(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


Validator = Range | OneOf | ZooKeeperConnect | ReplicaList


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


class BrokerProperty(NamedTuple):
    """One broker property. `default` None means unset (a lower-precedence synonym then applies)."""

    name: str
    type: ConfigType
    default: Value | None
    doc: str
    validator: Validator | None = None
    topic_name: str | None = None  # the topic-level config this property supplies the default of
    note: str | None = None  # how kbroker differs from Kafka, when it does
    ignored: bool = False  # accepted so Kafka's server.properties loads; no effect in kbroker
    per_listener: bool = False  # may be set for one listener as listener.name.<name>.<property>
    sensitive: bool = False  # a password or private key: DescribeConfigs never shows its value
    reported_type: ConfigType | None = None  # the type DescribeConfigs reports, when not the parsing type

    @property
    def describe_type(self) -> ConfigType:
        """The type DescribeConfigs reports: Kafka's (listeners are a LIST there, parsed whole here)."""
        return self.reported_type or self.type

    def parse(self, raw: str) -> Value:
        """Parse and validate a value given as a string (as in server.properties)."""
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator.check(self.name, value)
        return value


class Synonym(NamedTuple):
    """A broker property supplying a topic config's default; `scale` converts its unit to the topic's."""

    name: str
    scale: int = 1


class TopicProperty(NamedTuple):
    """One topic-level config; its default comes from the first broker synonym that has a value."""

    name: str
    type: ConfigType
    doc: str
    synonyms: tuple[Synonym, ...]
    validator: Validator | None = None
    negative_is_unlimited: bool = False  # Kafka maps any negative derived retention to -1
    default: Value | None = None  # the default when no broker property supplies one (no synonyms)
    ignored: bool = False  # accepted and reported with Kafka's default; no effect in kbroker

    def parse(self, raw: str) -> Value:
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator.check(self.name, value)
        return value


# --------------------------------------------------------------------------- parsing and rendering


def parse_value(name: str, type_: ConfigType, raw: str) -> Value:
    """Parse `raw` as Kafka's ConfigDef does for `type_`; raise ConfigError naming the property."""
    text = raw.strip()
    if type_ in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
        return text
    if type_ is ConfigType.LIST:
        return tuple(item.strip() for item in text.split(",")) if text else ()
    if type_ is ConfigType.BOOLEAN:
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ConfigError(f"invalid value {raw!r} for {name}: expected true or false")
    if type_ is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"invalid value {raw!r} for {name}: expected a number") from None
    return _parse_integer(name, type_, raw, text)


def _parse_integer(name: str, type_: ConfigType, raw: str, text: str) -> int:
    label = type_.label
    try:
        value = int(text, 10)
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {name}: expected an integer ({label})") from None
    low, high = _BOUNDS[label]
    if not low <= value <= high:
        raise ConfigError(f"invalid value {raw!r} for {name}: out of range for {label}")
    return value


def render_value(value: Value | None) -> str | None:
    """The string Kafka reports for a value (DescribeConfigs, topic defaults)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def java_double(x: float) -> str:
    """Java's Double.toString: plain for 1e-3 <= |x| < 1e7, else d.dddE<n>."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    from decimal import Decimal  # late: only very large or small doubles need it (start-up time)

    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    power = exponent + len(mantissa) - 1
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{power}"


def suggest(name: str, known: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest known name, or ''."""
    import difflib  # late: only a mistyped name needs it (start-up time)

    match = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


# --------------------------------------------------------------------------- the broker table

BOOL, STR, INT, SHORT, LONG, DOUBLE, LIST, PASSWORD = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)
_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000
_NON_NEGATIVE = Range(0)
_POSITIVE = Range(1)
_NO_CONTROLLER = "kbroker is one process with no KRaft controller or replication; accepted and ignored"
_NO_THREADS = "kbroker runs one event loop, so thread counts do not apply; accepted and ignored"
_INTERNAL_RF = (
    "used in cluster mode, where the internal topic is a replicated cluster topic; a broker alone keeps one replica"
)
_SHARE_STATE_RF = "share groups keep their state on each broker, in one replica; accepted and ignored"
_ZOOKEEPER_CONNECT = ZooKeeperConnect()
_REPLICA_LIST = ReplicaList()
_COMPRESSION = OneOf(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))


def _p(
    name: str,
    type_: ConfigType,
    default: Value | None,
    doc: str,
    validator: Validator | None = None,
    *,
    topic: str | None = None,
    note: str | None = None,
    ignored: bool = False,
    per_listener: bool = False,
    sensitive: bool = False,
    reported_type: ConfigType | None = None,
) -> BrokerProperty:
    return BrokerProperty(
        name, type_, default, doc, validator, topic, note, ignored, per_listener, sensitive, reported_type
    )


# fmt: off
_SERVER = [
    _p("node.id", INT, 1, "Id of this node, as given to clients in Metadata and FindCoordinator.", Range(0),
       note="Kafka has no default (KRaft requires one); kbroker uses 1."),
    _p("broker.id", INT, None, "Older name for node.id: stands in for it when node.id is unset, else must equal it.",
       Range(0), note="Kafka's default is -1 (unset); kbroker reports node.id's value."),
    _p("listeners", STR, "PLAINTEXT://127.0.0.1:9092",
       "Where to accept clients, as NAME://HOST:PORT entries separated by commas (one per listener, each with its "
       "own port); an empty host means all interfaces. --listen replaces them with one PLAINTEXT listener.",
       note="Kafka's default is PLAINTEXT://:9092 (all interfaces); controller listeners are skipped.", reported_type=LIST),
    _p("advertised.listeners", STR, None,
       "Address each listener gives clients in Metadata, FindCoordinator and DescribeCluster, as NAME://HOST:PORT. "
       "A listener not named here advertises its own address, with 127.0.0.1 for a wildcard host. "
       "--advertised-listener sets the first listener's.", reported_type=LIST),
    _p("listener.security.protocol.map", STR, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Security protocol of each listener name, as NAME:PROTOCOL pairs.",
       note="kbroker serves PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners."),
    _p("ssl.keystore.type", STR, "PEM", "Format of the keystore: PEM (a certificate chain and a private key).",
       OneOf(("PEM",)), note="Kafka's default is JKS; kbroker reads PEM keystores only.", per_listener=True),
    _p("ssl.keystore.location", STR, None,
       "PEM file holding the listener's private key and certificate chain.", per_listener=True),
    _p("ssl.keystore.certificate.chain", PASSWORD, None, "The certificate chain in PEM, inline (instead of a file).",
       per_listener=True, sensitive=True),
    _p("ssl.keystore.key", PASSWORD, None, "The private key in PEM, inline (instead of a file).", per_listener=True, sensitive=True),
    _p("ssl.key.password", PASSWORD, None, "Password of an encrypted private key.", per_listener=True, sensitive=True),
    _p("ssl.keystore.password", PASSWORD, None, "Keystore password (PEM keystores have none: use ssl.key.password).",
       per_listener=True, sensitive=True),
    _p("ssl.truststore.type", STR, "PEM", "Format of the truststore: PEM certificates.", OneOf(("PEM",)),
       note="Kafka's default is JKS; kbroker reads PEM truststores only.", per_listener=True),
    _p("ssl.truststore.location", STR, None, "PEM file of the certificate authorities trusted for client certificates.",
       per_listener=True),
    _p("ssl.truststore.certificates", PASSWORD, None, "Trusted certificates in PEM, inline (instead of a file).",
       per_listener=True, sensitive=True),
    _p("ssl.truststore.password", PASSWORD, None, "Truststore password (PEM truststores have none).", per_listener=True, sensitive=True),
    _p("ssl.client.auth", STR, "none",
       "Whether SSL listeners ask clients for a certificate: required, requested or none. With a certificate the "
       "client's principal is its subject (User:CN=...).", OneOf(("required", "requested", "none")),
       per_listener=True),
    _p("ssl.enabled.protocols", LIST, ("TLSv1.2", "TLSv1.3"), "TLS versions SSL listeners accept.",
       OneOf(("TLSv1.2", "TLSv1.3")), per_listener=True),
    _p("sasl.enabled.mechanisms", LIST, ("PLAIN",), "SASL mechanisms SASL_PLAINTEXT and SASL_SSL listeners offer.",
       OneOf(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")), note="Kafka's default is GSSAPI, which kbroker does not offer.",
       per_listener=True),
    _p("connections.max.reauth.ms", LONG, 0,
       "How long a SASL session lasts before the client must re-authenticate on the same connection (KIP-368); "
       "0: never.", _NON_NEGATIVE, per_listener=True),
    _p("sasl.server.max.receive.size", INT, 524288,
       "Largest request accepted from a client that has not authenticated yet (SASL listeners).", _POSITIVE,
       per_listener=True),
    _p("controller.listener.names", STR, None, "Listener names that belong to KRaft controllers; kbroker skips them.", reported_type=LIST),
    _p("message.max.bytes", INT, 1048588, "Largest record batch the broker accepts (topic default).", _NON_NEGATIVE,
       topic="max.message.bytes"),
    _p("max.request.partition.size.limit", INT, 2000, "Most partitions in one DescribeTopicPartitions answer.",
       _POSITIVE),
    _p("socket.request.max.bytes", INT, 104857600, "Largest request frame accepted; larger ones close the connection.",
       _POSITIVE),
    _p("socket.send.buffer.bytes", INT, 102400, "SO_SNDBUF of client sockets; -1 keeps the OS default."),
    _p("socket.receive.buffer.bytes", INT, 102400, "SO_RCVBUF of client sockets; -1 keeps the OS default."),
    _p("socket.listen.backlog.size", INT, 50, "Backlog of pending connections on the listening socket.", _POSITIVE),
    _p("max.connections", INT, 1000,
       "Most client connections open at once; further ones are closed when accepted, counted and logged.",
       _NON_NEGATIVE, note="Kafka's default is 2147483647 (no limit) and it stops accepting instead of refusing.",
       per_listener=True),
    _p("max.connections.per.ip", INT, INT_MAX, "Most connections open at once from one IP address.", _NON_NEGATIVE),
    _p("max.connections.per.ip.overrides", STR, "",
       "Per-address exceptions to max.connections.per.ip, as HOST:COUNT pairs separated by commas."),
    _p("connections.max.idle.ms", LONG, 600000, "A connection idle for this long is closed."),
    _p("connection.failed.authentication.delay.ms", INT, 100,
       "Delay before a connection whose authentication failed (a refused TLS client certificate) is closed, after "
       "the client has been told why.", _NON_NEGATIVE),
    _p("queued.max.request.bytes", LONG, 268435456,
       "Most bytes held by requests being received or handled, over all connections; when spent, connections "
       "stop reading until memory is released. -1: no limit. Must be at least socket.request.max.bytes.",
       note="Kafka's default is -1 (no limit); kbroker's buffers grow with the bytes that arrive, never to the "
       "announced size up front."),
    _p("kbroker.request.receive.timeout.ms", LONG, 30000,
       "A request whose first bytes arrived this long ago without the rest closes the connection (slow or stalled "
       "senders, slowloris). -1: no deadline.", note="kbroker only: Kafka has no per-request receive deadline."),
    _p("fetch.max.bytes", INT, 57671680, "Most bytes returned for one Fetch request.", Range(1024)),
    _p("quota.window.num", INT, 11, "Number of samples kept to measure client quotas (byte rates, request time).",
       _POSITIVE),
    _p("quota.window.size.seconds", INT, 1, "Time span of each client quota sample.", _POSITIVE),
    _p("controller.quota.window.num", INT, 11, "Number of samples of the controller mutation quota (its burst is "
       "this many windows of the quota).", _POSITIVE),
    _p("controller.quota.window.size.seconds", INT, 1, "Time span of each controller mutation quota sample.",
       _POSITIVE),
    _p("kbroker.fsync.before.ack", BOOL, False,
       "fsync the log before acknowledging a produce with acks=all (concurrent requests share one fsync).",
       topic="kbroker.fsync.before.ack",
       note="kbroker only (also a topic-level config); Kafka relies on replication and flush.messages/flush.ms."),
]

_TOPICS = [
    _p("num.partitions", INT, 1, "Partitions of a topic created without a count (auto-created or -1).", _POSITIVE),
    _p("default.replication.factor", INT, 1, "Replication factor of topics created without one.", _POSITIVE,
       note="Used by the controller in cluster mode (zookeeper.connect); a broker alone satisfies only 1."),
    _p("auto.create.topics.enable", BOOL, True, "Create a topic when a producer or Metadata request names a missing one."),
    _p("delete.topic.enable", BOOL, True, "Allow DeleteTopics; when false it fails with TOPIC_DELETION_DISABLED."),
]

_LOG = [
    _p("log.dir", STR, "./data", "Directory holding the data, when log.dirs is unset. --data-dir wins.",
       note="Kafka's default is /tmp/kafka-logs.", reported_type=LIST),
    _p("log.dirs", LIST, None, "Data directories (preferred over log.dir). --data-dir wins.",
       note="Partitions are spread over the directories; the first also holds the broker's own state."),
    _p("log.segment.bytes", INT, 1073741824, "Size at which a log segment is closed and a new one rolled.", Range(14),
       topic="segment.bytes", note="Kafka 4 raised the minimum to 1 MiB; kbroker keeps 3.9's 14 bytes for tests."),
    _p("log.roll.ms", LONG, None, "Age (ms) at which a segment is rolled; unset: log.roll.hours.", topic="segment.ms"),
    _p("log.roll.hours", INT, 168, "Age (hours) at which a segment is rolled, below log.roll.ms.", _POSITIVE,
       topic="segment.ms"),
    _p("log.roll.jitter.ms", LONG, None, "Most random jitter (ms) taken off the roll time; unset: log.roll.jitter.hours.",
       topic="segment.jitter.ms"),
    _p("log.roll.jitter.hours", INT, 0, "Most random jitter (hours) taken off the roll time, below log.roll.jitter.ms.",
       _NON_NEGATIVE, topic="segment.jitter.ms"),
    _p("log.retention.ms", LONG, None, "Time (ms) data is kept; -1 keeps it forever; unset: log.retention.minutes.",
       topic="retention.ms"),
    _p("log.retention.minutes", INT, None, "Time (minutes) data is kept, below log.retention.ms; unset: hours.",
       topic="retention.ms"),
    _p("log.retention.hours", INT, 336, "Time (hours) data is kept, below log.retention.ms and .minutes.",
       topic="retention.ms",
       note="Kafka's default is 168 (one week); kbroker keeps data for two weeks by default."),
    _p("log.retention.bytes", LONG, -1, "Size a partition may reach before old segments are deleted; -1: no limit.",
       topic="retention.bytes"),
    _p("log.retention.check.interval.ms", LONG, 300000, "How often segments are checked against the retention limits.",
       _POSITIVE),
    _p("log.cleanup.policy", LIST, ("delete",), "What happens to segments past retention: delete and/or compact.",
       OneOf(("compact", "delete")), topic="cleanup.policy"),
    _p("log.index.size.max.bytes", INT, 10485760, "Largest offset index file of a segment.", Range(4),
       topic="segment.index.bytes"),
    _p("log.index.interval.bytes", INT, 4096, "Bytes of log between two offset index entries.", _NON_NEGATIVE,
       topic="index.interval.bytes"),
    _p("log.flush.interval.messages", LONG, LONG_MAX, "Records appended to a partition before it is fsynced.",
       _POSITIVE, topic="flush.messages"),
    _p("log.flush.interval.ms", LONG, None, "Longest time (ms) appended data waits for an fsync; unset: "
       "log.flush.scheduler.interval.ms.", topic="flush.ms"),
    _p("log.flush.scheduler.interval.ms", LONG, LONG_MAX, "How often logs are checked for a due time-based fsync.",
       topic="flush.ms"),
    _p("log.flush.offset.checkpoint.interval.ms", INT, 60000, "How often the recovery points are checkpointed.",
       _NON_NEGATIVE, note="kbroker also snapshots the producer state of partitions that moved on at this interval."),
    _p("log.segment.delete.delay.ms", LONG, 60000, "Wait before a deleted segment's files are removed.", _NON_NEGATIVE,
       topic="file.delete.delay.ms"),
    _p("log.preallocate", BOOL, False, "Preallocate the file of a new segment.", topic="preallocate"),
    _p("log.message.timestamp.type", STR, "CreateTime", "Timestamp stored for records: the producer's or append time.",
       OneOf(("CreateTime", "LogAppendTime")), topic="message.timestamp.type"),
    _p("log.message.timestamp.before.max.ms", LONG, LONG_MAX, "How far (ms) a CreateTime may lie before the broker's "
       "clock.", _NON_NEGATIVE, topic="message.timestamp.before.max.ms"),
    _p("log.message.timestamp.after.max.ms", LONG, 3600000, "How far (ms) a CreateTime may lie after the broker's "
       "clock (Kafka 4's default: one hour).", _NON_NEGATIVE, topic="message.timestamp.after.max.ms"),
    _p("log.cleaner.enable", BOOL, True, "Run the log cleaner, which compacts topics with cleanup.policy=compact."),
    _p("log.cleaner.threads", INT, 1, "Log cleaner threads.", _NON_NEGATIVE,
       note="kbroker runs one cleaner thread; 0 turns the cleaner off as log.cleaner.enable=false does."),
    _p("log.cleaner.io.max.bytes.per.second", DOUBLE, 1.7976931348623157e308,
       "Most bytes a second the cleaner reads plus writes."),
    _p("log.cleaner.dedupe.buffer.size", LONG, 134217728, "Memory for the cleaner's key map, 24 bytes a key.",
       Range(1)),
    _p("log.cleaner.io.buffer.size", INT, 524288, "Cleaner I/O buffer size.", Range(0),
       note="kbroker reads and writes in 1 MiB chunks; accepted and ignored", ignored=True),
    _p("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, "Share of the key map's slots that may be filled.",
       Range(0, 1)),
    _p("log.cleaner.backoff.ms", LONG, 15000, "Sleep of the cleaner when no log needs cleaning.", _NON_NEGATIVE),
    _p("log.cleaner.delete.retention.ms", LONG, 86400000, "How long tombstones are kept in compacted topics.",
       _NON_NEGATIVE, topic="delete.retention.ms"),
    _p("log.cleaner.min.compaction.lag.ms", LONG, 0, "Least age of a record before it may be compacted.", _NON_NEGATIVE,
       topic="min.compaction.lag.ms"),
    _p("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, "Most age of a record before it must be compacted.",
       _POSITIVE, topic="max.compaction.lag.ms"),
    _p("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, "Dirty share of a log that makes it eligible for compaction.",
       Range(0, 1), topic="min.cleanable.dirty.ratio"),
    _p("min.insync.replicas", INT, 1, "Replicas that must have a write for acks=all to succeed.", _POSITIVE,
       topic="min.insync.replicas"),
    _p("unclean.leader.election.enable", BOOL, False, "Allow an out-of-sync replica to become leader.",
       topic="unclean.leader.election.enable"),
    _p("compression.type", STR, "producer", "Codec of stored batches; 'producer' keeps what the producer sent.",
       _COMPRESSION, topic="compression.type"),
    _p("compression.gzip.level", INT, -1, "gzip level when the broker compresses.", Range(1, 9, also=(-1,)),
       topic="compression.gzip.level"),
    _p("compression.lz4.level", INT, 9, "lz4 level when the broker compresses.", Range(1, 17),
       topic="compression.lz4.level"),
    _p("compression.zstd.level", INT, 3, "zstd level when the broker compresses.", Range(-131072, 22),
       topic="compression.zstd.level"),
]

_GROUPS = [
    _p("group.min.session.timeout.ms", INT, 6000, "Shortest session timeout a group member may ask for."),
    _p("group.max.session.timeout.ms", INT, 1800000, "Longest session timeout a group member may ask for."),
    _p("group.initial.rebalance.delay.ms", INT, 0, "Wait for more members before the first rebalance of a new group.",
       note="Kafka's default is 3000; kbroker's 0 lets a lone consumer start at once."),
    _p("group.max.size", INT, INT_MAX, "Most members in one consumer group.", _POSITIVE),
    _p("offsets.retention.minutes", INT, 10080, "How long committed offsets of an empty group are kept.", _POSITIVE),
    _p("offsets.retention.check.interval.ms", LONG, 600000, "How often expired offsets are looked for.", _POSITIVE),
    _p("offset.metadata.max.bytes", INT, 4096, "Largest metadata string stored with a committed offset."),
    _p("offsets.topic.num.partitions", INT, 50, "Partitions of __consumer_offsets (do not change once in use).",
       _POSITIVE),
    _p("group.consumer.assignors", LIST,
       ("uniform", "range"),
       "Server-side assignors of consumer-protocol groups, the default first (uniform, range or Kafka's class names)."),
    _p("group.consumer.max.size", INT, INT_MAX, "Most members in one consumer-protocol group.", _POSITIVE),
    _p("group.consumer.migration.policy", STR, "bidirectional",
       "Online migration of a group with members between the classic and the consumer protocol: bidirectional, "
       "upgrade (classic to consumer only), downgrade (consumer to classic only) or disabled.",
       OneOf(("bidirectional", "upgrade", "downgrade", "disabled"))),
    _p("group.consumer.session.timeout.ms", INT, 45000, "Default of the consumer.session.timeout.ms group config.",
       _POSITIVE),
    _p("group.consumer.min.session.timeout.ms", INT, 45000, "Least consumer.session.timeout.ms a group may set.",
       _POSITIVE),
    _p("group.consumer.max.session.timeout.ms", INT, 60000, "Most consumer.session.timeout.ms a group may set.",
       _POSITIVE),
    _p("group.consumer.heartbeat.interval.ms", INT, 5000, "Default of the consumer.heartbeat.interval.ms group config.",
       _POSITIVE),
    _p("group.consumer.min.heartbeat.interval.ms", INT, 5000, "Least consumer.heartbeat.interval.ms a group may set.",
       _POSITIVE),
    _p("group.consumer.max.heartbeat.interval.ms", INT, 15000, "Most consumer.heartbeat.interval.ms a group may set.",
       _POSITIVE),
]

_TRANSACTIONS = [
    _p("transactional.id.expiration.ms", INT, 604800000, "Idle time after which a transactional id is forgotten.",
       _POSITIVE),
    _p("transaction.max.timeout.ms", INT, 900000, "Longest transaction timeout a producer may ask for.", _POSITIVE),
    _p("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000,
       "How often timed-out transactions are aborted.", _POSITIVE),
    _p("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000,
       "How often expired transactional ids are removed.", _POSITIVE),
    _p("transaction.state.log.num.partitions", INT, 50, "Partitions of __transaction_state.", _POSITIVE),
    _p("producer.id.expiration.ms", INT, 86400000, "Idle time after which a partition forgets a producer id's state.",
       _POSITIVE),
    _p("producer.id.expiration.check.interval.ms", INT, 600000, "How often expired producer ids are looked for.",
       _POSITIVE),
]

_CLUSTER = [
    _p("zookeeper.connect", STR, None,
       "ZooKeeper servers of the cluster, as HOST:PORT,HOST:PORT with an optional chroot (/kafka). Set, the broker "
       "registers under /brokers/ids, takes part in the controller election and serves the cluster's metadata; "
       "unset, it runs alone.", _ZOOKEEPER_CONNECT),
    _p("zookeeper.session.timeout.ms", INT, 18000, "ZooKeeper session timeout: a broker silent this long loses its "
       "registration (and controllership).", _POSITIVE),
    _p("zookeeper.connection.timeout.ms", INT, None, "How long to wait for a ZooKeeper session at start; unset: the "
       "session timeout.", _POSITIVE),
    _p("broker.rack", STR, None, "Rack of this broker, registered in ZooKeeper and given to clients in Metadata.",
       note="Replica assignment is rack-unaware (the rack is reported, not used)."),
    _p("inter.broker.listener.name", STR, None, "Listener brokers use to talk to each other; unset: the listener "
       "named by security.inter.broker.protocol when that is set, else the first listener.",
       note="Followers fetch and coordinators send markers on it, with its TLS and SASL."),
    _p("security.inter.broker.protocol", STR, "PLAINTEXT", "Security protocol between brokers, when "
       "inter.broker.listener.name is unset: the listener of that name is the inter-broker one.",
       OneOf(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
       note="Taken only when set explicitly (kbroker's unset default is the first listener)."),
    _p("sasl.mechanism.inter.broker.protocol", STR, "GSSAPI", "SASL mechanism a broker authenticates with to "
       "the others on a SASL inter-broker listener, with the username and password of the listener's "
       "listener.name.<name>.<mechanism>.sasl.jaas.config.",
       note="kbroker offers PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; Kafka's default GSSAPI is refused at start."),
    _p("ssl.endpoint.identification.algorithm", STR, "https", "How a broker checks the certificate of another "
       "broker it connects to over TLS: https verifies the host name; empty: the CA only.", per_listener=True),
    _p("replica.lag.time.max.ms", LONG, 30000, "A follower that has not caught up for this long leaves the ISR.",
       _NON_NEGATIVE),
    _p("replica.fetch.max.bytes", INT, 1048576, "Bytes a follower asks per partition in a fetch.", _NON_NEGATIVE),
    _p("replica.fetch.min.bytes", INT, 1, "Least bytes a follower's fetch waits for."),
    _p("replica.fetch.wait.max.ms", INT, 500, "Longest wait of a follower's fetch."),
    _p("replica.fetch.backoff.ms", INT, 1000, "Pause of a follower after a failed fetch.", _NON_NEGATIVE),
    _p("replica.fetch.response.max.bytes", INT, 10485760, "Bytes a follower asks in a whole fetch.", _NON_NEGATIVE),
    _p("auto.leader.rebalance.enable", BOOL, True, "Move leadership back to preferred replicas periodically "
       "(the controller's imbalance check, every leader.imbalance.check.interval.seconds).",
       note="Cluster mode (zookeeper.connect) only: a broker alone leads every partition."),
    _p("leader.imbalance.check.interval.seconds", LONG, 300, "How often the controller checks whether leadership "
       "should move back to preferred replicas (auto.leader.rebalance.enable).", _POSITIVE),
    _p("leader.imbalance.per.broker.percentage", INT, 10, "Share (percent) of a broker's preferred partitions "
       "others may lead before the imbalance check moves them back (Kafka's ZooKeeper-mode setting).", Range(0, 100)),
]

_IGNORED = [
    _p("process.roles", LIST, None, "KRaft roles of this process.", OneOf(("broker", "controller")), note=_NO_CONTROLLER,
       ignored=True),
    _p("controller.quorum.voters", LIST, (), "KRaft controller quorum voters.", note=_NO_CONTROLLER, ignored=True),
    _p("controller.quorum.bootstrap.servers", LIST, (), "KRaft controller bootstrap servers.", note=_NO_CONTROLLER,
       ignored=True),
    _p("num.network.threads", INT, 3, "Network threads.", _POSITIVE, note=_NO_THREADS, ignored=True),
    _p("num.io.threads", INT, 8, "Request handler threads.", _POSITIVE, note=_NO_THREADS, ignored=True),
    _p("num.recovery.threads.per.data.dir", INT, 2, "Log recovery threads per data directory.", _POSITIVE,
       note=_NO_THREADS, ignored=True),
    _p("num.replica.fetchers", INT, 1, "Replica fetcher threads.", note=_NO_THREADS, ignored=True),
    _p("offsets.topic.replication.factor", SHORT, 3, "Replication factor of __consumer_offsets.", _POSITIVE,
       note=_INTERNAL_RF),
    _p("transaction.state.log.replication.factor", SHORT, 3, "Replication factor of __transaction_state.", _POSITIVE,
       note=_INTERNAL_RF),
    _p("transaction.state.log.min.isr", INT, 2, "min.insync.replicas of __transaction_state.", _POSITIVE,
       note=_INTERNAL_RF),
    _p("share.coordinator.state.topic.replication.factor", SHORT, 3, "Replication factor of __share_group_state.",
       _POSITIVE, note=_SHARE_STATE_RF, ignored=True),
    _p("share.coordinator.state.topic.min.isr", SHORT, 2, "min.insync.replicas of __share_group_state.", _POSITIVE,
       note=_SHARE_STATE_RF, ignored=True),
]

_SHARE_GROUPS = [
    _p("group.share.session.timeout.ms", INT, 45000, "A share-group member that has not heartbeated for this long is "
       "removed and its acquired records released.", _POSITIVE),
    _p("group.share.heartbeat.interval.ms", INT, 5000, "Heartbeat interval given to share-group members.", _POSITIVE),
    _p("group.share.record.lock.duration.ms", INT, 30000, "How long acquired records stay locked to a member before "
       "they can be delivered to another (share.record.lock.duration.ms per group).", _POSITIVE),
    _p("group.share.delivery.count.limit", INT, 5, "Deliveries of a record after which it is archived instead of "
       "released (share.delivery.count.limit per group).", Range(2, 10)),
    _p("group.share.partition.max.record.locks", INT, 2000, "Most in-flight records of one share partition "
       "(share.partition.max.record.locks per group).", Range(100, 10000)),
    _p("group.share.max.size", INT, 200, "Most members in one share group.", Range(1, 1000)),
    _p("group.share.min.session.timeout.ms", INT, 45000, "Smallest share.session.timeout.ms a group may set.",
       _POSITIVE),
    _p("group.share.max.session.timeout.ms", INT, 60000, "Largest share.session.timeout.ms a group may set.",
       _POSITIVE),
    _p("group.share.min.heartbeat.interval.ms", INT, 5000, "Smallest share.heartbeat.interval.ms a group may set.",
       _POSITIVE),
    _p("group.share.max.heartbeat.interval.ms", INT, 15000, "Largest share.heartbeat.interval.ms a group may set.",
       _POSITIVE),
    _p("group.share.min.record.lock.duration.ms", INT, 15000, "Smallest share.record.lock.duration.ms a group may "
       "set.", Range(1000, 3600000)),
    _p("group.share.max.record.lock.duration.ms", INT, 60000, "Largest share.record.lock.duration.ms a group may "
       "set.", Range(30000, 3600000)),
    _p("group.share.min.delivery.count.limit", INT, 2, "Smallest share.delivery.count.limit a group may set.",
       Range(2, 10)),
    _p("group.share.max.delivery.count.limit", INT, 10, "Largest share.delivery.count.limit a group may set.",
       Range(2, 10)),
    _p("group.share.min.partition.max.record.locks", INT, 100, "Smallest share.partition.max.record.locks a group "
       "may set.", Range(100, 10000)),
    _p("group.share.max.partition.max.record.locks", INT, 4000, "Largest share.partition.max.record.locks a group "
       "may set.", Range(100, 10000)),
    _p("share.coordinator.state.topic.num.partitions", INT, 50, "Partitions of __share_group_state (do not change "
       "once in use).", _POSITIVE),
]

_AUTHORIZER = [
    _p("authorizer.class.name", STR, "",
       "The authorizer: Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer (or the older "
       "kafka.security.authorizer.AclAuthorizer) turns ACL enforcement on; empty: every client may do anything.",
       OneOf(("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer")),
       note="both names select the same ACL rules (StandardAuthorizer's); ACLs live in <data-dir>/acls.json."),
    _p("super.users", STR, "", "Principals allowed everything, separated by semicolons (User:admin;User:CN=broker)."),
    _p("allow.everyone.if.no.acl.found", BOOL, False,
       "With an authorizer: whether an action on a resource that has no ACL at all is allowed."),
]

_HTTP = [
    _p("kbroker.http.listeners", LIST, (), "kbroker only: HTTP listeners (http://HOST:PORT, comma-separated) serving "
       "/health, /ready, /metrics, REST Proxy v2 and WebSocket queues; empty: no HTTP listener."),
    _p("kbroker.http.max.body.bytes", INT, 8388608, "kbroker only: largest HTTP request body accepted (413 above).",
       Range(1024)),
    _p("kbroker.testing.admin.enable", BOOL, False, "kbroker only, for tests, never in production: a virtual "
       "clock, fault injection and reset, controlled over HTTP at /v1/testing/* on the HTTP listener (docs/testing.md)."),
    _p("consumer.instance.timeout.ms", INT, 300000, "REST Proxy: a consumer instance idle for this long is "
       "destroyed.", Range(1000)),
    _p("kbroker.vq.topic", STR, "kbroker-vq", "kbroker only: the data topic of the virtual queues (/v1/vq), created "
       "on the first publish; a queue is a record key."),
    _p("kbroker.vq.topic.partitions", INT, 4, "kbroker only: partitions of the virtual queues' data topic when "
       "created (do not change once in use: a queue lives in murmur2(name) % partitions).", _POSITIVE),
    _p("kbroker.vq.positions.topic", STR, "__kbroker_vq_positions", "kbroker only: the compacted topic holding "
       "the virtual queues' named consumers' positions."),
    _p("kbroker.vq.index.checkpoint.interval.ms", INT, 60000, "kbroker only: how often the virtual queues' index "
       "is checkpointed (a restart reads the data topic only past the checkpoint).", Range(1000)),
]

# fmt: on

_DECLARED = (
    *_SERVER,
    *_TOPICS,
    *_LOG,
    *_GROUPS,
    *_SHARE_GROUPS,
    *_TRANSACTIONS,
    *_AUTHORIZER,
    *_HTTP,
    *_CLUSTER,
    *_IGNORED,
)


def _kafka_only(declared: Iterable[str]) -> list[BrokerProperty]:
    """Every other config Kafka's broker reports (kbroker/kafka_configs.py): accepted with Kafka's type and
    default, listed by DescribeConfigs, and not acted on, for the reason kbroker/config_ignored.py gives."""
    from kbroker.config_ignored import reason_ignored
    from kbroker.kafka_configs import BROKER

    known = set(declared)
    result = []
    for name, type_code, default, _dynamic, sensitive in BROKER:
        if name in known:
            continue
        type_ = ConfigType(type_code)
        value = None if default is None else parse_value(name, type_, default)
        reason = reason_ignored(name) or "not implemented in kbroker"
        doc = f"Apache Kafka's {name}: accepted, with no effect in kbroker."
        result.append(BrokerProperty(name, type_, value, doc, note=reason, ignored=True, sensitive=sensitive))
    return result


_KAFKA_ONLY = _kafka_only(p.name for p in _DECLARED)

BROKER_PROPERTIES: dict[str, BrokerProperty] = {p.name: p for p in (*_DECLARED, *_KAFKA_ONLY)}
SECTIONS: tuple[tuple[str, tuple[BrokerProperty, ...]], ...] = (
    ("Server", tuple(_SERVER)),
    ("Topics", tuple(_TOPICS)),
    ("Log (topic defaults)", tuple(_LOG)),
    ("Groups and offsets", tuple(_GROUPS)),
    ("Share groups", tuple(_SHARE_GROUPS)),
    ("Transactions and producer ids", tuple(_TRANSACTIONS)),
    ("Authorization (ACLs)", tuple(_AUTHORIZER)),
    ("HTTP gateway (REST Proxy v2, WebSocket queues, health, metrics)", tuple(_HTTP)),
    ("Cluster (ZooKeeper)", tuple(_CLUSTER)),
    ("Accepted for server.properties compatibility, no effect", tuple(_IGNORED) + tuple(_KAFKA_ONLY)),
)


# Broker properties an IncrementalAlterConfigs/AlterConfigs may change at run time, per broker or as the
# cluster default: those Kafka 4.3 updates dynamically (its DescribeConfigs read_only=false) that kbroker
# applies at once too, and those Kafka updates dynamically that kbroker accepts without acting on them
# (stored and reported, no effect). The topic defaults reach every partition log. Kafka's other dynamic
# configs that kbroker implements (listeners, connection quotas, producer.id.expiration.ms, SSL/SASL, the
# log cleaner) are read-only here.
_APPLIED_AT_RUN_TIME: frozenset[str] = frozenset(
    {
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.type",
        "compression.zstd.level",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleanup.policy",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.index.interval.bytes",
        "log.index.size.max.bytes",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.type",
        "log.preallocate",
        "log.retention.bytes",
        "log.retention.ms",
        "log.roll.jitter.ms",
        "log.roll.ms",
        "log.segment.bytes",
        "log.segment.delete.delay.ms",
        "message.max.bytes",
        "min.insync.replicas",
        "num.io.threads",
        "num.network.threads",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "unclean.leader.election.enable",
    }
)


def _dynamic_in_kafka() -> frozenset[str]:
    from kbroker.kafka_configs import BROKER

    return frozenset(name for name, _type, _default, dynamic, _sensitive in BROKER if dynamic)


DYNAMIC_BROKER_CONFIGS: frozenset[str] = _APPLIED_AT_RUN_TIME | (
    frozenset(p.name for p in BROKER_PROPERTIES.values() if p.ignored) & _dynamic_in_kafka()
)

# --------------------------------------------------------------------------- the topic table


def _t(
    name: str,
    type_: ConfigType,
    doc: str,
    synonyms: tuple[Synonym, ...],
    validator: Validator | None = None,
    negative_is_unlimited: bool = False,
    *,
    default: Value | None = None,
    ignored: bool = False,
) -> TopicProperty:
    return TopicProperty(name, type_, doc, synonyms, validator, negative_is_unlimited, default, ignored)


def _same(broker_name: str) -> tuple[Synonym, ...]:
    return (Synonym(broker_name),)


# fmt: off
_TOPIC_LIST = [
    _t("cleanup.policy", LIST, "delete and/or compact segments past retention.", _same("log.cleanup.policy"),
       OneOf(("compact", "delete"))),
    _t("compression.type", STR, "Codec of stored batches; 'producer' keeps the producer's.", _same("compression.type"),
       _COMPRESSION),
    _t("compression.gzip.level", INT, "gzip level when the broker compresses.", _same("compression.gzip.level"),
       Range(1, 9, also=(-1,))),
    _t("compression.lz4.level", INT, "lz4 level when the broker compresses.", _same("compression.lz4.level"),
       Range(1, 17)),
    _t("compression.zstd.level", INT, "zstd level when the broker compresses.", _same("compression.zstd.level"),
       Range(-131072, 22)),
    _t("delete.retention.ms", LONG, "How long tombstones are kept when compacting.",
       _same("log.cleaner.delete.retention.ms"), _NON_NEGATIVE),
    _t("file.delete.delay.ms", LONG, "Wait before a deleted segment's files are removed.",
       _same("log.segment.delete.delay.ms"), _NON_NEGATIVE),
    _t("follower.replication.throttled.replicas", LIST, "Replicas throttled when followers replicate (no effect in "
       "kbroker: replication is not throttled).", (), _REPLICA_LIST, default=(), ignored=True),
    _t("flush.messages", LONG, "Records appended before the partition is fsynced.", _same("log.flush.interval.messages"),
       _POSITIVE),
    _t("flush.ms", LONG, "Longest time appended data waits for an fsync.",
       (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms")), _NON_NEGATIVE),
    _t("index.interval.bytes", INT, "Bytes of log between two offset index entries.", _same("log.index.interval.bytes"),
       _NON_NEGATIVE),
    _t("kbroker.fsync.before.ack", BOOL, "kbroker only: fsync before acknowledging acks=all produce requests.",
       _same("kbroker.fsync.before.ack")),
    _t("leader.replication.throttled.replicas", LIST, "Replicas throttled when the leader serves followers (no "
       "effect in kbroker: replication is not throttled).", (), _REPLICA_LIST, default=(), ignored=True),
    _t("local.retention.bytes", LONG, "Local size limit under tiered storage (-2: retention.bytes); no effect in "
       "kbroker: tiered storage is not offered.", _same("log.local.retention.bytes"), Range(-2), ignored=True),
    _t("local.retention.ms", LONG, "Local time limit under tiered storage (-2: retention.ms); no effect in kbroker: "
       "tiered storage is not offered.", _same("log.local.retention.ms"), Range(-2), ignored=True),
    _t("max.compaction.lag.ms", LONG, "Most age of a record before it must be compacted.",
       _same("log.cleaner.max.compaction.lag.ms"), _POSITIVE),
    _t("max.message.bytes", INT, "Largest record batch accepted for this topic.", _same("message.max.bytes"),
       _NON_NEGATIVE),
    _t("message.timestamp.after.max.ms", LONG, "How far a CreateTime may lie after the broker's clock.",
       _same("log.message.timestamp.after.max.ms"), _NON_NEGATIVE),
    _t("message.timestamp.before.max.ms", LONG, "How far a CreateTime may lie before the broker's clock.",
       _same("log.message.timestamp.before.max.ms"), _NON_NEGATIVE),
    _t("message.timestamp.type", STR, "CreateTime or LogAppendTime.", _same("log.message.timestamp.type"),
       OneOf(("CreateTime", "LogAppendTime"))),
    _t("min.cleanable.dirty.ratio", DOUBLE, "Dirty share that makes the log eligible for compaction.",
       _same("log.cleaner.min.cleanable.ratio"), Range(0, 1)),
    _t("min.compaction.lag.ms", LONG, "Least age of a record before it may be compacted.",
       _same("log.cleaner.min.compaction.lag.ms"), _NON_NEGATIVE),
    _t("min.insync.replicas", INT, "Replicas that must have a write for acks=all.", _same("min.insync.replicas"),
       _POSITIVE),
    _t("preallocate", BOOL, "Preallocate the file of a new segment.", _same("log.preallocate")),
    _t("remote.log.copy.disable", BOOL, "Stop copying segments to tiered storage (tiered storage is not offered).",
       (), default=False, ignored=True),
    _t("remote.log.delete.on.disable", BOOL, "Delete tiered data when tiered storage is turned off (tiered storage "
       "is not offered).", (), default=False, ignored=True),
    _t("remote.storage.enable", BOOL, "Keep the topic in tiered storage: must stay false, tiered storage is not "
       "offered (as in Kafka with remote.log.storage.system.enable=false).", (), default=False, ignored=True),
    _t("retention.bytes", LONG, "Size the partition may reach before old segments go; -1: no limit.",
       _same("log.retention.bytes")),
    _t("retention.ms", LONG, "Time data is kept; -1: forever.",
       (Synonym("log.retention.ms"), Synonym("log.retention.minutes", _MINUTE_MS),
        Synonym("log.retention.hours", _HOUR_MS)), Range(-1), negative_is_unlimited=True),
    _t("segment.bytes", INT, "Size at which a segment is rolled.", _same("log.segment.bytes"), Range(14)),
    _t("segment.index.bytes", INT, "Largest offset index file of a segment.", _same("log.index.size.max.bytes"),
       Range(4)),
    _t("segment.jitter.ms", LONG, "Most random jitter taken off the roll time.",
       (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", _HOUR_MS)), _NON_NEGATIVE),
    _t("segment.ms", LONG, "Age at which a segment is rolled.",
       (Synonym("log.roll.ms"), Synonym("log.roll.hours", _HOUR_MS)), _POSITIVE),
    _t("unclean.leader.election.enable", BOOL, "Allow an out-of-sync replica to become leader.",
       _same("unclean.leader.election.enable")),
]

# fmt: on

TOPIC_PROPERTIES: dict[str, TopicProperty] = {t.name: t for t in _TOPIC_LIST}

assert all(s.name in BROKER_PROPERTIES for t in _TOPIC_LIST for s in t.synonyms)
assert DYNAMIC_BROKER_CONFIGS <= BROKER_PROPERTIES.keys()


# --------------------------------------------------------------------------- the group table


class GroupProperty(NamedTuple):
    """One GROUP resource config (KIP-848's group configs): its broker default and the broker bounds."""

    name: str
    type: ConfigType
    doc: str
    default_from: str | None  # the broker property giving its default (None: `default`)
    min_from: str | None = None  # the broker property it must be at least
    max_from: str | None = None  # the broker property it must be at most
    default: Value | None = None  # the default when no broker property gives it
    validator: Validator | None = None

    def parse(self, raw: str) -> Value:
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator.check(self.name, value)
        return value


# Kafka 4.3 also has share.* (share groups) and streams.* (Streams groups) configs: a module adding those
# groups adds its rows here.
GROUP_PROPERTIES: dict[str, GroupProperty] = {
    g.name: g
    for g in (
        GroupProperty(
            "consumer.session.timeout.ms",
            INT,
            "Session timeout of the members of a consumer-protocol group.",
            "group.consumer.session.timeout.ms",
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        ),
        GroupProperty(
            "consumer.heartbeat.interval.ms",
            INT,
            "Heartbeat interval of the members of a consumer-protocol group.",
            "group.consumer.heartbeat.interval.ms",
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
        ),
        # share groups (KIP-932), read by kbroker/share (membership at each heartbeat, share partitions at each use)
        GroupProperty(
            "share.session.timeout.ms",
            INT,
            "Session timeout of the members of a share group.",
            "group.share.session.timeout.ms",
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
        ),
        GroupProperty(
            "share.heartbeat.interval.ms",
            INT,
            "Heartbeat interval of the members of a share group.",
            "group.share.heartbeat.interval.ms",
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
        ),
        GroupProperty(
            "share.record.lock.duration.ms",
            INT,
            "How long acquired records stay locked to a share-group member.",
            "group.share.record.lock.duration.ms",
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        ),
        GroupProperty(
            "share.delivery.count.limit",
            INT,
            "Deliveries of a record after which a share group archives it.",
            "group.share.delivery.count.limit",
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        ),
        GroupProperty(
            "share.partition.max.record.locks",
            INT,
            "Most in-flight records of one share partition of the group.",
            "group.share.partition.max.record.locks",
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        ),
        GroupProperty(
            "share.auto.offset.reset",
            STR,
            "Where a share partition of the group starts: latest (the high watermark) or earliest.",
            None,
            default="latest",
            validator=OneOf(("latest", "earliest")),
        ),
        GroupProperty(
            "share.isolation.level",
            STR,
            "read_committed: the group receives records of committed transactions only, below the last stable "
            "offset; read_uncommitted: every record.",
            None,
            default="read_uncommitted",
            validator=OneOf(("read_committed", "read_uncommitted")),
        ),
        # kbroker's share-group extensions (docs/queues.md), checked by kbroker.share.check_group_config
        GroupProperty(
            "kbroker.share.tag.filter",
            STR,
            "Only records whose kbroker-tag headers match this expression (e.g. TagA || TagB) are delivered to the "
            "share group; the others are archived for it. Empty: every record.",
            None,
            default="",
        ),
        GroupProperty(
            "errors.deadletterqueue.topic.name",
            STR,
            "Topic the share group copies records to when they are rejected or reach the delivery count limit. "
            "Empty: none.",
            None,
            default="",
        ),
    )
}

assert all(
    n in BROKER_PROPERTIES for g in GROUP_PROPERTIES.values() for n in (g.default_from, g.min_from, g.max_from) if n
)

#: Kafka topic configs kbroker does not support: refused by CreateTopics/AlterConfigs with that reason.
UNSUPPORTED_TOPIC_CONFIGS = (
    frozenset(
        {
            "compression.type",
            "compression.gzip.level",
            "compression.lz4.level",
            "compression.zstd.level",
            "delete.retention.ms",
            "follower.replication.throttled.replicas",
            "leader.replication.throttled.replicas",
            "local.retention.bytes",
            "local.retention.ms",
            "max.compaction.lag.ms",
            "message.downconversion.enable",
            "message.format.version",
            "message.timestamp.difference.max.ms",
            "min.cleanable.dirty.ratio",
            "min.compaction.lag.ms",
            "min.insync.replicas",
            "preallocate",
            "remote.log.copy.disable",
            "remote.log.delete.on.disable",
            "remote.storage.enable",
            "segment.jitter.ms",
            "unclean.leader.election.enable",
        }
    )
    - TOPIC_PROPERTIES.keys()
)
