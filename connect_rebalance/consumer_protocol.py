"""Kafka's ConsumerProtocol, the embedded protocol of classic `consumer` groups, as values.

Classic consumers put a subscription in their JoinGroup protocol metadata and receive an
assignment in SyncGroup. The coordinator reads both for online migration (a classic group
converted to a consumer group, classic members inside one), for OffsetDelete and offset
retention (which topics a group subscribes to) and for its metrics (which partitions moved);
it writes assignments for classic members of a consumer group. The bytes are Kafka's
(`ConsumerProtocolSubscription` v0-v3, `ConsumerProtocolAssignment` v0-v3), read and written
with kafka-python's schema-driven codec, which no other module imports for this. Pure: no IO.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

PROTOCOL_TYPE = "consumer"
MAX_ASSIGNMENT_VERSION = 3


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's subscription: topics, what it owns (v1+, by topic name), its rack (v3+)."""

    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...] = ()
    rack_id: str | None = None
    user_data: bytes | None = None


def decode_subscription(metadata: bytes) -> Subscription:
    """Raises ValueError if the bytes are not a ConsumerProtocol subscription."""
    try:
        decoded = ConsumerProtocolSubscription.decode(metadata)
    except Exception as exc:  # any client may send any bytes
        raise ValueError(f"not a consumer protocol subscription: {exc}") from exc
    owned = getattr(decoded, "owned_partitions", None) or []
    user_data = decoded.user_data
    return Subscription(
        decoded.version,
        tuple(decoded.topics or ()),
        tuple((tp.topic, p) for tp in owned for p in tp.partitions),
        getattr(decoded, "rack_id", None) or None,
        None if user_data is None else bytes(user_data),
    )


def subscribed_topics(metadata: bytes) -> list[str]:
    """The topics of a subscription, or none if the bytes do not decode (a bad one subscribes
    to nothing)."""
    try:
        return list(decode_subscription(metadata).topics)
    except ValueError:
        return []


def subscription_version(metadata: bytes) -> int:
    try:
        return decode_subscription(metadata).version
    except ValueError:
        return 0


def encode_subscription(topics: Iterable[str], version: int = 0, user_data: bytes | None = None) -> bytes:
    return bytes(
        ConsumerProtocolSubscription(version=version, topics=list(topics), user_data=user_data).encode(
            header=True
        )
    )


def decode_assignment(data: bytes, keep_user_data: bool = False) -> list[tuple[str, int]]:
    """(topic, partition) pairs of an assignment; empty bytes assign nothing.

    Raises ValueError if the bytes do not decode, or carry user data from a custom assignor
    that would be lost (unless `keep_user_data`, for readers that only count partitions).
    """
    if not data:
        return []
    try:
        decoded = ConsumerProtocolAssignment.decode(data)
    except Exception as exc:
        raise ValueError(f"not a consumer protocol assignment: {exc}") from exc
    if decoded.user_data and not keep_user_data:
        raise ValueError("the assignment carries user data from a custom assignor, which would be lost")
    return [(tp.topic, p) for tp in decoded.assigned_partitions for p in tp.partitions]


def encode_assignment(partitions: Iterable[tuple[str, int]], version: int = 0) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return bytes(
        ConsumerProtocolAssignment(
            version=min(max(version, 0), MAX_ASSIGNMENT_VERSION),
            assigned_partitions=[{"topic": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())],
            user_data=None,
        ).encode(header=True)
    )
