"""The GROUP config resource (KIP-848's group configs): describe, alter, checks against the broker bounds.

The table of group configs is `GROUP_PROPERTIES` (kbroker/config_defs.py); each takes its default from a
broker property and must lie within two others, as Kafka's GroupConfig checks. Overrides are stored per
group in the data directory whether the group exists or not, as Kafka does. kbroker has no
consumer-protocol groups yet, so the consumer.* values have no effect until it does; the share.* values
apply to share groups (kbroker/share/runtime.py reads them whenever a share partition is used).
"""

from __future__ import annotations

from collections.abc import Mapping

from kbroker.config import ConfigEntry, ConfigSource, ConfigSynonym
from kbroker.config_defs import GROUP_PROPERTIES, ConfigError, render_value
from kbroker.context import RequestContext
from kbroker.handlers._topic_admin import fail
from kbroker.share import check_group_config
from protocol.errors import ErrorCode


def current_group_configs(ctx: RequestContext, group: str) -> dict[str, str]:
    return ctx.broker.dynamic_configs.group_configs(group)


def group_config_entries(ctx: RequestContext, group: str) -> list[ConfigEntry]:
    if not group:
        raise fail(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    config = ctx.broker.config
    overrides = ctx.broker.dynamic_configs.group_configs(group)
    entries = []
    for name, prop in GROUP_PROPERTIES.items():
        if prop.default_from is None:  # a default of its own (share.auto.offset.reset)
            broker_value = render_value(prop.default)
            synonyms = [ConfigSynonym(name, broker_value, ConfigSource.DEFAULT_CONFIG)]
        else:
            broker_value = render_value(config.get(prop.default_from))
            synonyms = [ConfigSynonym(prop.default_from, broker_value, config.source(prop.default_from))]
        value = broker_value
        if name in overrides:
            value = render_value(prop.parse(overrides[name]))
            synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.GROUP_CONFIG))
        entries.append(ConfigEntry(name, value, synonyms[0].source, prop.type, prop.doc, False, tuple(synonyms)))
    return entries


def alter_group_configs(
    ctx: RequestContext, group: str, configs: Mapping[str, str | None], validate_only: bool
) -> None:
    if not group:
        raise fail(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    config = ctx.broker.config
    values = {k: v for k, v in configs.items() if v is not None}
    for name, raw in values.items():
        prop = GROUP_PROPERTIES.get(name)
        if prop is None:
            raise fail(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
        try:
            value = prop.parse(raw)
        except ConfigError as exc:
            raise fail(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if not isinstance(value, int):
            problem = check_group_config(name, str(value))
            if problem is not None:
                raise fail(ErrorCode.INVALID_CONFIG, f"Invalid value for {name}: {problem}")
            continue  # a string config: its validator checked it
        if prop.min_from is not None and value < config.get_int(prop.min_from):
            raise fail(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {prop.min_from}")
        if prop.max_from is not None and value > config.get_int(prop.max_from):
            raise fail(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {prop.max_from}")
    if validate_only:
        return
    try:
        ctx.broker.dynamic_configs.set_group_configs(group, values)
    except OSError as exc:
        ctx.log.error("group_configs_alter_failed", group=group, error=str(exc))
        raise fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not store the group configs: {exc}") from None
    ctx.log.info("group_configs_altered", group=group, configs=values)
