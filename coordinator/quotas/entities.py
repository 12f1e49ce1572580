"""Quota entities and their settings: validation, Kafka's order of precedence, Describe's filters.

An entity is a set of (type, name) pairs, the types being `user`, `client-id` and `ip`; a
name of None is that type's default (Kafka's `<default>`). A quota set on a default entity
is a quota each user or client id has on its own, not one they share.

Which quota applies to a connection of user U with client id C is the first of KIP-55's
eight places that has one: (U, C), (U, default C), (U), (default U, C),
(default U, default C), (default U), (C), (default C). The bytes of every connection that
the quota covers in the same way count together: a quota on (C) is shared by all users of
C, one on (default U) is had by each user alone. That sharing key is `QuotaTags`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from connect_rebalance.errors import ErrorCode, KafkaApiError

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
ENFORCED_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)
# Kafka's other quota keys: refused by name rather than stored and never enforced.
NOT_ENFORCED = {
    "request_percentage": "request-time quotas",
    "controller_mutation_rate": "controller mutation quotas",
    "connection_creation_rate": "connection-creation-rate quotas (max.connections.per.ip bounds connections)",
}
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # sorted by type


@dataclass(frozen=True, slots=True)
class QuotaTags:
    """Which connections share one measured rate: the user's and client id's names where the
    quota that applies names that type (exactly or by default), "" where it does not."""

    user: str
    client_id: str


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity named by a request's (type, name) pairs, refused as Kafka refuses it."""
    pairs = list(pairs)
    if not pairs:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    _check_types([t for t, _ in pairs], "client quota entity")
    if any(name == "" for _, name in pairs):
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST, "An entity name must not be empty (null is the default)"
        )
    return tuple(sorted(pairs))


def _check_types(types: list[str], what: str) -> None:
    unknown = [t for t in types if t not in ENTITY_TYPES]
    if unknown:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {unknown[0]}")
    if len(set(types)) != len(types):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Duplicate entity type in the {what}")
    if IP in types and len(types) > 1:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"An ip {what} cannot be combined with other types")


def checked_value(entity: Entity, key: str, value: float | None) -> float | None:
    """The value an alteration sets (None removes), refused when we would not enforce it."""
    if key in NOT_ENFORCED:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST, f"{key}: {NOT_ENFORCED[key]} are not supported by this coordinator"
        )
    if key not in ENFORCED_KEYS:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if any(t == IP for t, _ in entity):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"{key} cannot be set for an ip entity")
    if value is not None:
        if value != int(value):
            raise KafkaApiError(
                ErrorCode.INVALID_REQUEST, f"{key} must be a whole number of bytes per second"
            )
        if value <= 0:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"{key} must be positive, not {value:g}")
    return value


def _precedence(user: str, client_id: str) -> list[tuple[Entity, QuotaTags]]:
    both, by_user, by_client = QuotaTags(user, client_id), QuotaTags(user, ""), QuotaTags("", client_id)
    return [
        (((CLIENT_ID, client_id), (USER, user)), both),
        (((CLIENT_ID, None), (USER, user)), both),
        (((USER, user),), by_user),
        (((CLIENT_ID, client_id), (USER, None)), both),
        (((CLIENT_ID, None), (USER, None)), both),
        (((USER, None),), by_user),
        (((CLIENT_ID, client_id),), by_client),
        (((CLIENT_ID, None),), by_client),
    ]


@dataclass(slots=True)
class QuotaSettings:
    """Every entity's quotas, as the security log's records leave them."""

    values: dict[Entity, dict[str, float]] = field(default_factory=dict)

    def apply(self, entity: Entity, key: str, value: float | None) -> None:
        if value is None:
            held = self.values.get(entity, {})
            held.pop(key, None)
            if not held:
                self.values.pop(entity, None)
        else:
            self.values.setdefault(entity, {})[key] = value

    def applying(self, key: str, user: str, client_id: str) -> tuple[float, QuotaTags] | None:
        """The bound on `key` for a connection of `user` with `client_id`, and who shares it;
        None when no quota applies."""
        if not self.values:
            return None
        for entity, tags in _precedence(user, client_id):
            bound = self.values.get(entity, {}).get(key)
            if bound is not None:
                return bound, tags
        return None

    def matching(
        self, components: list[tuple[str, int, str | None]], strict: bool
    ) -> dict[Entity, dict[str, float]]:
        """DescribeClientQuotas: the entities each component matches (exactly a name, the
        default, or any), and with `strict` only those with no other entity type."""
        types = [t for t, _, _ in components]
        _check_types(types, "filter")
        odd = [m for _, m, _ in components if m not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY)]
        if odd:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown match type {odd[0]}")
        found = {}
        for entity, quotas in self.values.items():
            names = dict(entity)
            if strict and set(names) != set(types):
                continue
            if all(_matches(names, component) for component in components):
                found[entity] = dict(quotas)
        return found


def _matches(names: dict[str, str | None], component: tuple[str, int, str | None]) -> bool:
    entity_type, match_type, match = component
    if entity_type not in names:
        return False
    if match_type == MATCH_EXACT:
        return names[entity_type] == match
    if match_type == MATCH_DEFAULT:
        return names[entity_type] is None
    return True
