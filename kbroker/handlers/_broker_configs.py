"""Dynamic broker configs (KIP-226) for AlterConfigs and IncrementalAlterConfigs: checks, storage, live effect.

A BROKER resource names this node (its per-broker configs) or is empty (the cluster-wide default).
As in Kafka 4.3: a known config that cannot change at run time is INVALID_REQUEST "Cannot update these
configs dynamically: [...]", a bad value INVALID_REQUEST naming it, a name Kafka does not know is
stored and reported with no value. Accepted configs are written to the data directory
(kbroker/config_repository.py) and applied at once: topic defaults reach every running log.
"""

from __future__ import annotations

from collections.abc import Mapping

from kbroker.broker import reconfigure, with_dynamic_configs
from kbroker.config import BROKER_PROPERTIES, ConfigError
from kbroker.config_defs import DYNAMIC_BROKER_CONFIGS, ConfigType, render_value
from kbroker.config_repository import CLUSTER_DEFAULT, ConfigRepository
from kbroker.context import RequestContext
from kbroker.handlers._topic_admin import check_broker_name, fail
from kbroker.log import InvalidConfigError, LogConfig
from protocol.errors import ErrorCode


def current_broker_configs(ctx: RequestContext, name: str) -> dict[str, str]:
    return ctx.broker.dynamic_configs.broker_configs(_resource(ctx, name))


def _resource(ctx: RequestContext, name: str) -> str:
    """The repository key: this node's id as Kafka writes it ("01" names node 1), or the cluster default."""
    check_broker_name(ctx.broker, name)
    return str(ctx.broker.node_id) if name else CLUSTER_DEFAULT


def is_list_broker_config(name: str) -> bool:
    prop = BROKER_PROPERTIES.get(name)
    return prop is not None and prop.type is ConfigType.LIST


def broker_list_base(current: Mapping[str, str | None], name: str) -> str:
    """Where APPEND/SUBTRACT start for a broker config: its dynamic value, else Kafka's default."""
    value = current.get(name)
    if value is not None:
        return value
    return render_value(BROKER_PROPERTIES[name].default) or ""


def alter_broker_configs(
    ctx: RequestContext, name: str, configs: Mapping[str, str | None], validate_only: bool
) -> None:
    broker = ctx.broker
    resource = _resource(ctx, name)
    values = {k: v for k, v in configs.items() if v is not None}
    fixed = sorted(n for n in values if n in BROKER_PROPERTIES and n not in DYNAMIC_BROKER_CONFIGS)
    if fixed:
        raise fail(ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(fixed)}]")
    for key, raw in values.items():
        prop = BROKER_PROPERTIES.get(key)
        if prop is None:
            continue
        try:
            prop.parse(raw)
        except ConfigError as exc:
            raise fail(ErrorCode.INVALID_REQUEST, f"Invalid value {raw} for configuration {key}: {exc}") from None
    candidate = ConfigRepository()
    for key in (CLUSTER_DEFAULT, str(broker.node_id)):
        candidate.set_broker_configs(key, broker.dynamic_configs.broker_configs(key))
    candidate.set_broker_configs(resource, values)
    try:
        LogConfig.from_properties(with_dynamic_configs(broker.config, candidate).topic_defaults())
    except (ConfigError, InvalidConfigError) as exc:
        raise fail(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if validate_only:
        return
    try:
        broker.dynamic_configs.set_broker_configs(resource, values)
    except OSError as exc:
        ctx.log.error("broker_configs_alter_failed", broker=name, error=str(exc))
        raise fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not store the broker configs: {exc}") from None
    reconfigure(broker)
    ctx.log.info("broker_configs_altered", broker=resource or "<default>", configs=values)
