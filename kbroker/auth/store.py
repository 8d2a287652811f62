"""The ACLs, kept durably in `<data-dir>/acls.json` (Kafka keeps them as records in its metadata log).

Every change is written atomically (temp file, fsync, rename, fsync of the directory) before
CreateAcls or DeleteAcls is answered, so an acknowledged change survives kill -9. The file:

    {"version": 1, "acls": [{"resource_type": "TOPIC", "name": "orders", "pattern_type": "LITERAL",
                             "principal": "User:alice", "host": "*", "operation": "READ", "permission": "ALLOW"}]}

In memory the ACLs are indexed by resource type, then literal name or prefix, so authorizing an
action looks at the ACLs that can apply to it only. An unreadable file stops the start with a
message, as a corrupt server.properties would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from kbroker.auth.acl import WILDCARD, AclBinding, AclBindingFilter, PatternType, ResourceType
from kbroker.config_defs import ConfigError
from kbroker.log.checkpoint import write_atomically

FILE_NAME = "acls.json"
VERSION = 1


class AclStore:
    """The set of ACLs; `path` None keeps them in memory only (tests)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._acls: dict[AclBinding, None] = {}  # insertion-ordered set
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}

    @classmethod
    def load(cls, data_dir: Path) -> AclStore:
        store = cls(data_dir / FILE_NAME)
        assert store.path is not None
        if not store.path.exists():
            return store
        try:
            document = json.loads(store.path.read_bytes())
            if document.get("version") != VERSION:
                raise ValueError(f"unknown version {document.get('version')!r}")
            for item in document["acls"]:
                store._index(AclBinding.from_json(item))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ConfigError(f"cannot read {store.path}: {error}") from None
        return store

    def __len__(self) -> int:
        return len(self._acls)

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(list(self._acls))

    def applicable(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        """The ACLs that apply to the resource: literal with its name or "*", prefixed with a prefix of it."""
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for acl in self._prefixed.get(resource_type, ()):
            if name.startswith(acl.name):
                yield acl

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        return [acl for acl in self._acls if acl.resource_type is resource_type]

    def matching(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def add(self, acls: Iterable[AclBinding]) -> int:
        """Add the ACLs not already present (creating an existing ACL succeeds and changes nothing); saved
        before returning. Returns how many were new."""
        new = [acl for acl in dict.fromkeys(acls) if acl not in self._acls]
        for acl in new:
            self._index(acl)
        if new:
            try:
                self._save()
            except OSError:
                for acl in new:
                    self._unindex(acl)
                raise
        return len(new)

    def remove(self, acls: Iterable[AclBinding]) -> int:
        gone = [acl for acl in dict.fromkeys(acls) if acl in self._acls]
        for acl in gone:
            self._unindex(acl)
        if gone:
            try:
                self._save()
            except OSError:
                for acl in gone:
                    self._index(acl)
                raise
        return len(gone)

    def _index(self, acl: AclBinding) -> None:
        self._acls[acl] = None
        if acl.pattern_type is PatternType.PREFIXED:
            self._prefixed.setdefault(acl.resource_type, []).append(acl)
        else:
            self._literal.setdefault((acl.resource_type, acl.name), []).append(acl)

    def _unindex(self, acl: AclBinding) -> None:
        del self._acls[acl]
        if acl.pattern_type is PatternType.PREFIXED:
            self._prefixed[acl.resource_type].remove(acl)
        else:
            self._literal[(acl.resource_type, acl.name)].remove(acl)

    def _save(self) -> None:
        if self.path is None:
            return
        document = {"version": VERSION, "acls": [acl.to_json() for acl in self._acls]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(document, indent=1).encode())
