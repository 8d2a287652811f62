"""Dynamic configs kept in the data directory (Kafka's ConfigRepository): per broker, the cluster
default, and per consumer group.

`<data-dir>/dynamic-configs.json`, written atomically (temp file, fsync, rename, fsync of the directory):

    {"version": 1, "brokers": {"": {...cluster default...}, "1": {...node 1...}}, "groups": {"g": {...}}}

Values are the raw strings clients sent, already validated. Kafka keeps these records in its metadata
log; kbroker has one node, so one small file does. An unreadable file stops the start with a message,
as a corrupt server.properties would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kbroker.config_defs import ConfigError
from kbroker.log.checkpoint import write_atomically

FILE_NAME = "dynamic-configs.json"
VERSION = 1
CLUSTER_DEFAULT = ""


class ConfigRepository:
    """Dynamic broker and group configs; `path` None keeps them in memory only."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._brokers: dict[str, dict[str, str]] = {}
        self._groups: dict[str, dict[str, str]] = {}

    @classmethod
    def load(cls, data_dir: Path) -> ConfigRepository:
        repository = cls(data_dir / FILE_NAME)
        assert repository.path is not None
        if not repository.path.exists():
            return repository
        try:
            document = json.loads(repository.path.read_bytes())
            if document.get("version") != VERSION:
                raise ValueError(f"unknown version {document.get('version')!r}")
            repository._brokers = _sections(document["brokers"])
            repository._groups = _sections(document["groups"])
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ConfigError(f"cannot read {repository.path}: {error}") from None
        return repository

    def broker_configs(self, name: str) -> dict[str, str]:
        """The dynamic configs of broker `name` ("": the cluster default)."""
        return dict(self._brokers.get(name, {}))

    def group_configs(self, group: str) -> dict[str, str]:
        return dict(self._groups.get(group, {}))

    def groups(self) -> list[str]:
        """The groups that have configs."""
        return sorted(self._groups)

    def set_broker_configs(self, name: str, configs: Mapping[str, str]) -> None:
        _replace(self._brokers, name, configs)
        self._save()

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        _replace(self._groups, group, configs)
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        document = {"version": VERSION, "brokers": self._brokers, "groups": self._groups}
        write_atomically(self.path, json.dumps(document, indent=1, sort_keys=True).encode())


def _replace(sections: dict[str, dict[str, str]], name: str, configs: Mapping[str, str]) -> None:
    if configs:
        sections[name] = dict(configs)
    else:
        sections.pop(name, None)


def _sections(raw: object) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict):
        raise ValueError("expected an object")
    result: dict[str, dict[str, str]] = {}
    for name, configs in raw.items():
        if not isinstance(configs, dict) or not all(isinstance(v, str) for v in configs.values()):
            raise ValueError(f"configs of {name!r} must map names to strings")
        result[str(name)] = {str(k): v for k, v in configs.items()}
    return result
