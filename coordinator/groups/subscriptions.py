"""What a classic `consumer`-protocol group subscribes to, read from its members' metadata."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

if TYPE_CHECKING:
    from .classic import ClassicGroup


def decode_subscription(metadata: bytes) -> list[str]:
    """The topics in a consumer-protocol subscription, or [] if it does not decode."""
    try:
        return list(ConsumerProtocolSubscription.decode(metadata).topics)
    except Exception:  # any client may send any bytes; a bad one subscribes to nothing
        return []


def subscribed_topics(group: ClassicGroup) -> set[str]:
    if group.protocol_type != "consumer":
        return set()
    topics: set[str] = set()
    for member in group.members.values():
        topics.update(decode_subscription(member.metadata(group.protocol_name)))
    return topics
