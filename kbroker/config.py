"""Broker configuration: Kafka's property names, parsed from server.properties text and KEY=VALUE pairs.

`BrokerConfig.build(properties, listen=..., advertised_listener=..., data_dir=...)` validates every
property against the table in `config_defs`, remembers which were set explicitly (so DescribeConfigs can
say STATIC_BROKER_CONFIG or DEFAULT_CONFIG truthfully) and derives the topic-level defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from enum import IntEnum
from pathlib import Path
from typing import NamedTuple, TypeVar

from kbroker.config_defs import (
    BROKER_PROPERTIES,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_PROPERTIES,
    BrokerProperty,
    ConfigError,
    ConfigType,
    TopicProperty,
    Value,
    render_value,
    suggest,
)

__all__ = [
    "BROKER_PROPERTIES",
    "TOPIC_PROPERTIES",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "Endpoint",
    "Listener",
    "parse_endpoint",
    "parse_properties",
    "read_properties_file",
    "validate_topic_configs",
]

_T = TypeVar("_T")
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


class ConfigSource(IntEnum):
    """Where a value comes from, numbered as DescribeConfigs (v1+) reports it."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# NamedTuples rather than dataclasses, as in config_defs: a dataclass compiles its methods when its class is
# made, ~0.5 ms each at every start (start-up time).


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(NamedTuple):
    """One row of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    doc: str
    read_only: bool
    synonyms: tuple[ConfigSynonym, ...]
    sensitive: bool = False  # a password or private key: its value is never shown


# --------------------------------------------------------------------------- endpoints and listeners


class Endpoint(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_endpoint(text: str, what: str = "address") -> Endpoint:
    """Parse HOST:PORT, [IPV6]:PORT or :PORT (all interfaces, as 0.0.0.0)."""
    match = re.fullmatch(r"\s*(?:\[([^\]]*)\]|([^:\[\]]*)):(\d{1,5})\s*", text)
    if match is None:
        raise ConfigError(f"invalid {what} {text!r}: expected HOST:PORT")
    host = match.group(1) if match.group(1) is not None else match.group(2)
    port = int(match.group(3))
    if port > 65535:
        raise ConfigError(f"invalid {what} {text!r}: port must be 0-65535")
    return Endpoint(host or "0.0.0.0", port)


def _protocol_map(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, protocol = pair.partition(":")
        if not sep:
            raise ConfigError(f"invalid listener.security.protocol.map entry {pair!r}: expected NAME:PROTOCOL")
        result[name.strip().upper()] = protocol.strip().upper()
    return result


SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Listener(NamedTuple):
    """One listener: its name (as in `listeners`), security protocol, where it binds and what it advertises."""

    name: str
    protocol: str
    bind: Endpoint
    advertised: Endpoint

    def __str__(self) -> str:
        return f"{self.name}://{self.bind}"


def _named_addresses(prop: str, text: str, controllers: set[str]) -> dict[str, str]:
    """NAME -> HOST:PORT of a NAME://HOST:PORT list, skipping controller listeners."""
    result: dict[str, str] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, sep, address = item.partition("://")
        name = name.strip().upper()
        if not sep or not name:
            raise ConfigError(f"invalid {prop} entry {item!r}: expected NAME://HOST:PORT")
        if name in result:
            raise ConfigError(f"{prop} names listener {name} twice")
        if name not in controllers:
            result[name] = address
    return result


def _build_listeners(
    values: Mapping[str, Value | None], listen_flag: str | None, advertised_flag: str | None
) -> tuple[Listener, ...]:
    controllers, protocols = _controller_names(values), _protocols(values)
    if listen_flag:
        binds = {"PLAINTEXT": parse_endpoint(listen_flag, "--listen")}
    else:
        text = values["listeners"]
        assert isinstance(text, str)
        binds = {
            n: parse_endpoint(a, f"listeners address of {n}")
            for n, a in _named_addresses("listeners", text, controllers).items()
        }
    if not binds:
        raise ConfigError("listeners must name at least one client listener")
    ports = [e.port for e in binds.values() if e.port]
    if len(ports) != len(set(ports)):
        raise ConfigError("each listener needs a port of its own")
    advertised: dict[str, Endpoint] = {}
    text = values["advertised.listeners"]
    if isinstance(text, str) and text.strip() and not listen_flag:
        for name, address in _named_addresses("advertised.listeners", text, controllers).items():
            if name not in binds:
                raise ConfigError(f"advertised.listeners names {name}, which is not in listeners")
            advertised[name] = parse_endpoint(address, f"advertised.listeners address of {name}")
    if advertised_flag:
        advertised[next(iter(binds))] = parse_endpoint(advertised_flag, "--advertised-listener")
    listeners = []
    for name, bind in binds.items():
        protocol = "PLAINTEXT" if listen_flag else protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"listener {name} uses an unmapped protocol: add {name}:PROTOCOL to listener.security.protocol.map"
            )
        if protocol not in SERVED_PROTOCOLS:
            raise ConfigError(
                f"listener {name} uses {protocol}; kbroker serves {', '.join(SERVED_PROTOCOLS)} listeners"
            )
        shown = advertised.get(name)
        if shown is None:
            shown = Endpoint(_WILDCARDS.get(bind.host, bind.host), bind.port)
        elif shown.host in _WILDCARDS or shown.port == 0:
            raise ConfigError(f"advertised listener {shown} must name a reachable host and a non-zero port")
        listeners.append(Listener(name, protocol, bind, shown))
    return tuple(listeners)


# --------------------------------------------------------------------------- properties files


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java .properties text: # and ! comments, key=value, key: value, key value, \\ continuations."""
    lines = re.split(r"\r\n|\r|\n", text)
    result: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index].lstrip(" \t\f")
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and index < len(lines):
            line = line[:-1] + lines[index].lstrip(" \t\f")
            index += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_property(line)
        result[key] = value
    return result


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    position = 0
    while position < len(line) and line[position] not in "=: \t\f":
        position += 2 if line[position] == "\\" else 1
    key, rest = line[:position], line[position:]
    stripped = rest.lstrip(" \t\f")
    if stripped[:1] in ("=", ":"):
        stripped = stripped[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(stripped)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped.startswith("u") and len(escaped) == 5:
            return chr(int(escaped[1:], 16))
        return _ESCAPES.get(escaped, escaped)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", replace, text, flags=re.DOTALL)


def read_properties_file(path: str | Path) -> dict[str, str]:
    """Read a server.properties file (ISO-8859-1 like Java, but UTF-8 is tried first)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_properties(text)


# --------------------------------------------------------------------------- topic configs


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Value]:
    """Validate topic-level overrides (CreateTopics, AlterConfigs); None values are skipped."""
    result: dict[str, Value] = {}
    for name, raw in configs.items():
        prop = TOPIC_PROPERTIES.get(name)
        if prop is None:
            raise ConfigError(f"unknown topic config {name!r}{suggest(name, TOPIC_PROPERTIES)}")
        if raw is not None:
            result[name] = prop.parse(raw)
    return result


# --------------------------------------------------------------------------- the broker config


class BrokerConfig:
    """The broker's settings. Build with `BrokerConfig.build(...)`; immutable afterwards.

    `listen`, `advertised` and `data_dir` come from the command line when given there, else from
    `listeners`, `advertised.listeners` and `log.dirs`/`log.dir`. An advertised port of 0 (listening on
    port 0) means "whatever port was bound": the server calls `with_listen_port(bound)`.

    Dynamic configs (KIP-226) lie over the static ones: `with_dynamic(cluster_default, per_broker)`
    returns the config with those raw values applied, in Kafka's precedence: per broker, then the
    cluster default, then static (server.properties, --config, flags), then Kafka's default.
    Names kbroker does not know are kept and reported (with no value), as Kafka does.
    """

    __slots__ = (
        "_static",
        "_values",
        "_explicit",
        "_dynamic_default",
        "_dynamic_broker",
        "listeners",
        "listen",
        "advertised",
        "data_dir",
        "_per_listener",
    )

    def __init__(
        self,
        values: Mapping[str, Value | None],
        explicit: Mapping[str, str],
        listeners: tuple[Listener, ...],
        data_dir: Path,
        per_listener: Mapping[tuple[str, str], Value] | None = None,
        dynamic_default: Mapping[str, str] | None = None,
        dynamic_broker: Mapping[str, str] | None = None,
    ) -> None:
        self._static = dict(values)
        self._explicit = dict(explicit)
        self._dynamic_default = dict(dynamic_default or {})
        self._dynamic_broker = dict(dynamic_broker or {})
        self._values = dict(self._static)
        for layer in (self._dynamic_default, self._dynamic_broker):
            for name, raw in layer.items():
                prop = BROKER_PROPERTIES.get(name)
                if prop is not None:
                    self._values[name] = prop.parse(raw)
        self.listeners = listeners
        self.listen = listeners[0].bind  # the first listener (the only one unless `listeners` names more)
        self.advertised = listeners[0].advertised
        self.data_dir = data_dir
        self._per_listener = dict(per_listener or {})

    @property
    def log_dirs(self) -> tuple[Path, ...]:
        """Every data directory, `data_dir` (where the broker's own state lives) first."""
        dirs = _log_dirs_from(self._static, None)
        return dirs if dirs[0] == self.data_dir else (self.data_dir,)

    @classmethod
    def build(
        cls,
        properties: Mapping[str, str] | None = None,
        *,
        listen: str | None = None,
        advertised_listener: str | None = None,
        data_dir: str | Path | None = None,
    ) -> BrokerConfig:
        """Validate `properties` (Kafka names, string values) and the command-line overrides."""
        explicit = {key.strip(): raw for key, raw in (properties or {}).items()}
        per_listener = _per_listener_values(explicit)
        values = _parse_all({k: v for k, v in explicit.items() if not k.startswith(LISTENER_PREFIX)})
        _reconcile_node_id(values, explicit)
        _check_request_limits(values)
        listeners = _build_listeners(values, listen, advertised_listener)
        directory = _data_dir_from(values, data_dir)
        # Flags are static settings too: record them under Kafka's names so DescribeConfigs tells the truth.
        if listen:
            _record(values, explicit, "listeners", ",".join(f"{x.name}://{x.bind}" for x in listeners))
        if advertised_listener:
            _record(values, explicit, "advertised.listeners", _advertised_text(listeners))
        if data_dir is not None and str(data_dir):
            _record(values, explicit, "log.dirs", str(directory))
        config = cls(values, explicit, listeners, directory, per_listener)
        config._check_derived()
        inter_broker = values.get("inter.broker.listener.name")
        if "security.inter.broker.protocol" in explicit:
            if isinstance(inter_broker, str):
                raise ConfigError(
                    "only one of inter.broker.listener.name and security.inter.broker.protocol may be set"
                )
            inter_broker = values["security.inter.broker.protocol"]
        if isinstance(inter_broker, str) and inter_broker.upper() not in {x.name for x in listeners}:
            raise ConfigError(f"inter.broker.listener.name {inter_broker} must be one of the listeners")
        return config

    # ----- property access

    def get(self, name: str) -> Value | None:
        """The effective typed value of a broker property (None when unset and without default)."""
        try:
            return self._values[name]
        except KeyError:
            raise ConfigError(f"unknown broker config {name!r}{suggest(name, BROKER_PROPERTIES)}") from None

    def get_int(self, name: str) -> int:
        return _typed(name, self.get(name), int)

    def get_bool(self, name: str) -> bool:
        return _typed(name, self.get(name), bool)

    def get_str(self, name: str) -> str:
        return _typed(name, self.get(name), str)

    def get_float(self, name: str) -> float:
        return _typed(name, self.get(name), float)

    def get_list(self, name: str) -> tuple[str, ...]:
        return _typed(name, self.get(name), tuple)

    def is_set(self, name: str) -> bool:
        """True when the property was given explicitly (config file, --config, or its command-line flag)."""
        self.get(name)
        return name in self._explicit

    def source(self, name: str) -> ConfigSource:
        if name in self._dynamic_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self._dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return ConfigSource.STATIC_BROKER_CONFIG if self.is_set(name) else ConfigSource.DEFAULT_CONFIG

    # ----- dynamic configs

    def with_dynamic(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]) -> BrokerConfig:
        """This config with the given dynamic layers (raw strings; ConfigError on a bad value)."""
        return BrokerConfig(
            self._static,
            self._explicit,
            self.listeners,
            self.data_dir,
            self._per_listener,
            cluster_default,
            per_broker,
        )

    @property
    def dynamic_default(self) -> Mapping[str, str]:
        return dict(self._dynamic_default)

    @property
    def dynamic_broker(self) -> Mapping[str, str]:
        return dict(self._dynamic_broker)

    @property
    def explicit(self) -> Mapping[str, str]:
        """The properties set explicitly, as raw strings: config file, --config, and the flags
        --listen, --advertised-listener, --data-dir (recorded as listeners, advertised.listeners, log.dirs)."""
        return dict(self._explicit)

    @property
    def node_id(self) -> int:
        return self.get_int("node.id")

    @property
    def zookeeper_connect(self) -> str | None:
        """The cluster's ZooKeeper (zookeeper.connect); None: this broker runs alone."""
        value = self._values.get("zookeeper.connect")
        return value.strip() if isinstance(value, str) and value.strip() else None

    @property
    def inter_broker_listener(self) -> Listener:
        """The listener other brokers reach this one through: inter.broker.listener.name, else the one named
        after security.inter.broker.protocol when that is set (Kafka's rule), else the first."""
        name = self._values.get("inter.broker.listener.name")
        if not isinstance(name, str) and "security.inter.broker.protocol" in self._explicit:
            name = self._values.get("security.inter.broker.protocol")
        return self.listener(name.upper()) if isinstance(name, str) else self.listeners[0]

    @property
    def fsync_before_ack(self) -> bool:
        return self.get_bool("kbroker.fsync.before.ack")

    def ignored_settings(self) -> list[str]:
        """Explicitly set properties that kbroker accepts but does not act on (to warn about)."""
        return [name for name in self._explicit if name in BROKER_PROPERTIES and BROKER_PROPERTIES[name].ignored]

    def with_listen_port(self, port: int) -> BrokerConfig:
        """A copy for the first listener bound to `port`; a derived advertised port 0 follows it."""
        return self.with_bound_ports({self.listeners[0].name: port})

    def with_bound_ports(self, ports: Mapping[str, int]) -> BrokerConfig:
        """A copy for listeners bound to `ports` (name -> port); derived advertised ports 0 follow them."""
        listeners = []
        for listener in self.listeners:
            port = ports.get(listener.name, listener.bind.port)
            advertised = listener.advertised
            if advertised.port == 0:
                advertised = Endpoint(advertised.host, port)
            listeners.append(Listener(listener.name, listener.protocol, Endpoint(listener.bind.host, port), advertised))
        values, explicit = dict(self._static), dict(self._explicit)
        if "listeners" in explicit:
            _record(values, explicit, "listeners", ",".join(f"{x.name}://{x.bind}" for x in listeners))
        return BrokerConfig(
            values,
            explicit,
            tuple(listeners),
            self.data_dir,
            self._per_listener,
            self._dynamic_default,
            self._dynamic_broker,
        )

    def listener(self, name: str) -> Listener:
        for listener in self.listeners:
            if listener.name == name:
                return listener
        raise KeyError(f"no listener named {name}")

    def for_listener(self, name: str, prop: str) -> Value | None:
        """A property's value on one listener: `listener.name.<name>.<prop>` when set, else the broker's."""
        value = self._per_listener.get((name.upper(), prop))
        if value is None and not prop.endswith(".sasl.jaas.config"):  # those exist only per listener
            value = self.get(prop)
        return ",".join(value) if isinstance(value, tuple) else value

    # ----- topic-level defaults

    def topic_default_values(self) -> dict[str, Value]:
        """Topic config name -> typed default derived from the broker properties."""
        return {name: self._topic_default(prop) for name, prop in TOPIC_PROPERTIES.items()}

    def topic_defaults(self) -> dict[str, str]:
        """Topic config name -> default as Kafka renders it (e.g. retention.ms -> '604800000')."""
        return {name: str(render_value(value)) for name, value in self.topic_default_values().items()}

    def topic_config(self, overrides: Mapping[str, str | None] | None = None) -> dict[str, Value]:
        """The full typed config of a topic: validated `overrides` over the broker's defaults."""
        merged = self.topic_default_values()
        merged.update(validate_topic_configs(overrides or {}))
        return merged

    def _check_derived(self) -> None:
        """Kafka's checks of the values derived from synonyms (KafkaConfig.validateValues): each key alone
        may be in range (log.retention.ms=-5 means unlimited, as in Kafka) while the result is not."""
        for topic_name, rule, allowed in _DERIVED_RULES:
            prop = TOPIC_PROPERTIES[topic_name]
            value = self._topic_default(prop)
            assert isinstance(value, int)
            if not allowed(value):
                source = next((s.name for s in prop.synonyms if s.name in self._explicit), prop.synonyms[0].name)
                raise ConfigError(f"invalid value {self._explicit.get(source)} for {source}: {rule} (Kafka's rule)")

    def _topic_default(self, prop: TopicProperty) -> Value:
        if not prop.synonyms:
            assert prop.default is not None
            return prop.default
        given = self._explicit.keys() | self._dynamic_default.keys() | self._dynamic_broker.keys()
        candidates = [s for s in prop.synonyms if s.name in given]
        candidates += [s for s in prop.synonyms if self._values[s.name] is not None]
        synonym = candidates[0]
        value = self._values[synonym.name]
        assert value is not None
        if synonym.scale != 1:
            assert isinstance(value, int)
            value *= synonym.scale
        if prop.negative_is_unlimited and isinstance(value, int) and value < 0:
            value = -1
        return value

    # ----- DescribeConfigs

    def broker_entries(self, names: Iterable[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs rows for this broker (every property, those kbroker ignores too, and dynamic
        unknown names, or `names`, which may include dynamic unknown names)."""
        if names is None:
            wanted = [*BROKER_PROPERTIES, *self._unknown_dynamic()]
        else:
            wanted = list(names)
        entries = []
        for name in wanted:
            prop = BROKER_PROPERTIES.get(name)
            if prop is None:
                if name not in self._unknown_dynamic():
                    raise ConfigError(f"unknown broker config {name!r}{suggest(name, BROKER_PROPERTIES)}")
                synonyms = self._synonyms([name], name)
                entries.append(ConfigEntry(name, None, synonyms[0].source, ConfigType.UNKNOWN, "", True, synonyms))
                continue
            value = render_value(self._values[name])
            synonyms = self._synonyms(_group_of(prop) or [name], name)
            source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
            read_only = name not in DYNAMIC_BROKER_CONFIGS
            if prop.sensitive:  # as Kafka answers for a password: no value, anywhere
                value, synonyms = None, tuple(ConfigSynonym(s.name, None, s.source) for s in synonyms)
            entries.append(
                ConfigEntry(name, value, source, prop.describe_type, prop.doc, read_only, synonyms, prop.sensitive)
            )
        return entries

    def cluster_default_entries(self) -> list[ConfigEntry]:
        """DescribeConfigs rows of the cluster-wide dynamic default (an empty broker name): only the names
        set there, each with only its dynamic-default synonyms."""
        entries = []
        for name, raw in self._dynamic_default.items():
            prop = BROKER_PROPERTIES.get(name)
            names = (_group_of(prop) or [name]) if prop is not None else [name]
            synonyms = tuple(
                s for s in self._synonyms(names, name) if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            )
            if prop is None:
                entries.append(ConfigEntry(name, None, synonyms[0].source, ConfigType.UNKNOWN, "", True, synonyms))
            else:
                value = render_value(prop.parse(raw))
                read_only = name not in DYNAMIC_BROKER_CONFIGS
                entries.append(
                    ConfigEntry(name, value, synonyms[0].source, prop.describe_type, prop.doc, read_only, synonyms)
                )
        return entries

    def _unknown_dynamic(self) -> list[str]:
        names = dict.fromkeys([*self._dynamic_broker, *self._dynamic_default])
        return [n for n in names if n not in BROKER_PROPERTIES]

    def topic_entries(self, overrides: Mapping[str, str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs rows for a topic with the given explicit (TOPIC_CONFIG) overrides."""
        overrides = overrides or {}
        typed = self.topic_config(overrides)
        entries = []
        for name, prop in TOPIC_PROPERTIES.items():
            value = render_value(typed[name])
            names = [s.name for s in prop.synonyms]
            synonyms = self._synonyms(names, names[0]) if names else ()
            if name in overrides:
                synonyms = (ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG), *synonyms)
            source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
            entries.append(ConfigEntry(name, value, source, prop.type, prop.doc, False, synonyms))
        return entries

    def _synonyms(self, names: list[str], described: str) -> tuple[ConfigSynonym, ...]:
        """Kafka's ConfigHelper order: the values of `names` (synonyms in precedence order) grouped by
        source (dynamic per broker, dynamic default, static, default), then everything before the first
        entry for `described` dropped. So retention.ms, whose primary broker name log.retention.ms is
        unset, lists no synonym from log.retention.hours, exactly as Kafka answers."""
        result: list[ConfigSynonym] = []
        for source, layer in (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, self._dynamic_broker),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self._dynamic_default),
        ):
            for name in names:
                if name in layer:
                    prop = BROKER_PROPERTIES.get(name)
                    value = render_value(prop.parse(layer[name])) if prop is not None else None
                    result.append(ConfigSynonym(name, value, source))
        for name in names:
            if name in self._explicit:
                result.append(ConfigSynonym(name, render_value(self._static[name]), ConfigSource.STATIC_BROKER_CONFIG))
        for name in names:
            prop = BROKER_PROPERTIES.get(name)
            if prop is not None and prop.default is not None:
                result.append(ConfigSynonym(name, render_value(prop.default), ConfigSource.DEFAULT_CONFIG))
        while result and result[0].name != described:
            result.pop(0)
        return tuple(result)

    def __repr__(self) -> str:
        return (
            f"BrokerConfig(listeners={','.join(map(str, self.listeners))}, advertised={_advertised_text(self.listeners)}, "
            f"data_dir={str(self.data_dir)!r}, "
            f"explicit={sorted(self._explicit)!r})"  # names only: values may be passwords or keys
        )


# --------------------------------------------------------------------------- build helpers


def _parse_all(explicit: Mapping[str, str]) -> dict[str, Value | None]:
    values: dict[str, Value | None] = {name: prop.default for name, prop in BROKER_PROPERTIES.items()}
    for name, raw in explicit.items():
        prop = BROKER_PROPERTIES.get(name)
        if prop is None:
            hint = suggest(name, BROKER_PROPERTIES) or " (run 'kbroker configs' to list them)"
            raise ConfigError(f"unknown broker config {name!r}{hint}")
        values[name] = prop.parse(raw)
    return values


def _record(values: dict[str, Value | None], explicit: dict[str, str], name: str, raw: str) -> None:
    values[name] = BROKER_PROPERTIES[name].parse(raw)
    explicit[name] = raw


_DERIVED_RULES: tuple[tuple[str, str, Callable[[int], bool]], ...] = (
    ("retention.ms", "the retention time must be unlimited (-1) or at least 1 ms", lambda v: v == -1 or v >= 1),
    ("segment.ms", "the roll time must be at least 1 ms", lambda v: v >= 1),
    ("segment.jitter.ms", "the roll jitter must be at least 0 ms", lambda v: v >= 0),
)


def _reconcile_node_id(values: dict[str, Value | None], explicit: dict[str, str]) -> None:
    """broker.id stands in for an unset node.id; both set must agree; broker.id reports node.id."""
    if "broker.id" in explicit and "node.id" not in explicit:
        values["node.id"] = values["broker.id"]
        explicit["node.id"] = explicit["broker.id"]
    elif "broker.id" in explicit and values["broker.id"] != values["node.id"]:
        raise ConfigError(f"broker.id ({values['broker.id']}) must equal node.id ({values['node.id']})")
    values["broker.id"] = values["node.id"]


LISTENER_PREFIX = "listener.name."
JAAS_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _per_listener_values(explicit: Mapping[str, str]) -> dict[tuple[str, str], Value]:
    """`listener.name.<name>.<property>` settings, for properties that may differ per listener."""
    result: dict[tuple[str, str], Value] = {}
    for key, raw in explicit.items():
        if not key.startswith(LISTENER_PREFIX):
            continue
        name, _, prop = key[len(LISTENER_PREFIX) :].partition(".")
        mechanism, _, rest = prop.partition(".")
        if name and rest == "sasl.jaas.config" and mechanism.upper() in JAAS_MECHANISMS:
            result[(name.upper(), f"{mechanism.lower()}.sasl.jaas.config")] = raw  # kbroker.sasl parses it
            continue
        definition = BROKER_PROPERTIES.get(prop)
        if not name or definition is None or not definition.per_listener:
            allowed = ", ".join(sorted(p.name for p in BROKER_PROPERTIES.values() if p.per_listener))
            raise ConfigError(
                f"unknown per-listener config {key!r}: expected {LISTENER_PREFIX}<name>.<one of {allowed}>"
            )
        result[(name.upper(), prop)] = definition.parse(raw)
    return result


def _advertised_text(listeners: tuple[Listener, ...]) -> str:
    return ",".join(f"{x.name}://{x.advertised}" for x in listeners)


def _check_request_limits(values: Mapping[str, Value | None]) -> None:
    queued, largest = values["queued.max.request.bytes"], values["socket.request.max.bytes"]
    assert isinstance(queued, int) and isinstance(largest, int)
    if 0 <= queued < largest:
        raise ConfigError(
            f"queued.max.request.bytes ({queued}) must be -1 or at least socket.request.max.bytes ({largest}), "
            "or a request of the largest size could never be received"
        )
    overrides = values["max.connections.per.ip.overrides"]
    assert isinstance(overrides, str)
    for item in filter(None, (i.strip() for i in overrides.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip() or not count.strip().isdigit():
            raise ConfigError(f"invalid max.connections.per.ip.overrides entry {item!r}: expected HOST:COUNT")


def _controller_names(values: Mapping[str, Value | None]) -> set[str]:
    names = values["controller.listener.names"]
    return {n.strip().upper() for n in names.split(",") if n.strip()} if isinstance(names, str) else set()


def _protocols(values: Mapping[str, Value | None]) -> dict[str, str]:
    text = values["listener.security.protocol.map"]
    assert isinstance(text, str)
    return _protocol_map(text)


def _data_dir_from(values: Mapping[str, Value | None], flag: str | Path | None) -> Path:
    """The first data directory: --data-dir, else the first of log.dirs, else log.dir."""
    return _log_dirs_from(values, flag)[0]


def _log_dirs_from(values: Mapping[str, Value | None], flag: str | Path | None) -> tuple[Path, ...]:
    """Every data directory. --data-dir (one directory) wins over log.dirs, which wins over log.dir."""
    log_dirs = values["log.dirs"]
    if flag is not None and str(flag) != "":
        chosen = [str(flag)]
    elif isinstance(log_dirs, tuple) and log_dirs:
        chosen = list(log_dirs)
    else:
        chosen = [str(values["log.dir"])]
    if any(not c for c in chosen):
        raise ConfigError("the data directory must not be empty")
    paths = tuple(Path(c).expanduser().resolve() for c in chosen)
    if len(set(paths)) != len(paths):
        raise ConfigError(f"log.dirs names a directory twice: {','.join(chosen)}")
    return paths


def _group_of(prop: BrokerProperty) -> list[str]:
    """The broker properties feeding the same topic config, in precedence order."""
    if prop.topic_name is None:
        return []
    return [s.name for s in TOPIC_PROPERTIES[prop.topic_name].synonyms]


def _typed(name: str, value: Value | None, kind: type[_T]) -> _T:
    if kind is int and isinstance(value, bool):
        raise ConfigError(f"{name} is a boolean, not an integer")
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return kind(value)  # type: ignore[call-arg]
    if not isinstance(value, kind):
        raise ConfigError(f"{name} has no {kind.__name__} value (it is {value!r})")
    return value
