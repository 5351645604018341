"""GroupConfigRepository: each group's config overrides, and the values in effect.

Kafka's ``GroupConfigManager``.  The keys, their defaults and their checks are
:mod:`kafka_net.config.group_keys`; a key a group does not override takes the
broker's value (``group.consumer.session.timeout.ms`` for
``consumer.session.timeout.ms``...), else Kafka's default.
"""

from __future__ import annotations

import threading

from kafka_net.config import ServerConfig
from kafka_net.config.broker_keys import BY_NAME
from kafka_net.config.group_keys import GROUP_CONFIGS, GroupConfigDef
from kafka_net.server.config_repository import with_config


def group_config_value(configs: "GroupConfigRepository | None", group_id: str, name: str,
                       default):
    """A group config in effect for a coordinator: ``group_id``'s own value of
    ``name``, else ``default``, the coordinator's broker-level value (Kafka's
    ``groupConfigManager.groupConfig(groupId).map(...).orElse(...)``)."""
    own = None if configs is None else configs.override(group_id, name)
    return default if own is None else own


def _broker_default(config: ServerConfig, definition: GroupConfigDef):
    """The value a group that does not override ``definition`` gets: its broker
    synonym's, else Kafka's default."""
    if definition.broker_default is None:
        return definition.default
    return getattr(config, BY_NAME[definition.broker_default].attr)


class GroupConfigRepository:
    """Each group's overrides, and the values in effect (the broker's defaults else)."""

    def __init__(self, config: ServerConfig) -> None:
        self._defaults = {name: _broker_default(config, d) for name, d in GROUP_CONFIGS.items()}
        self._overrides: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def default(self, name: str) -> int:
        return self._defaults[name]

    def overrides(self, group_id: str) -> dict[str, int]:
        with self._lock:
            return dict(self._overrides.get(group_id, {}))

    def all_overrides(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {group: dict(values) for group, values in self._overrides.items()}

    def override(self, group_id: str, name: str) -> int | None:
        """``group_id``'s own value of ``name``, None if it has none (hot path)."""
        own = self._overrides.get(group_id)
        return None if own is None else own.get(name)

    def value(self, group_id: str, name: str) -> int:
        """``name`` in effect for ``group_id`` (hot path: one dict lookup per level)."""
        own = self._overrides.get(group_id)
        if own is not None and name in own:
            return own[name]
        return self._defaults[name]

    def set_group_key(self, group_id: str, name: str, value: int | None) -> None:
        """Set (None: remove) one override: a ConfigRecord of resource GROUP applied."""
        with self._lock:
            own = with_config(self._overrides.get(group_id), name, value)
            if own:
                self._overrides[group_id] = own
            else:
                self._overrides.pop(group_id, None)

    def set_group_config(self, group_id: str, overrides: dict[str, int]) -> None:
        """Replace ``group_id``'s overrides (already validated)."""
        with self._lock:
            if overrides:
                self._overrides[group_id] = dict(overrides)
            else:
                self._overrides.pop(group_id, None)
