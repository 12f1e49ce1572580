"""What every group type offers the dispatcher, the admin APIs and committed offsets.

Kafka's `Group` interface, in small: a group says what it is (type, protocol type, state),
whether it is empty, which records delete it, and who may commit and fetch its offsets. The
dispatcher and offsets.py ask the group; they never branch on its class.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol


class Group(Protocol):
    group_id: str
    type_name: str  # "classic", "consumer", "connect": ListGroups' GroupType
    members: dict[str, Any]

    @property
    def state(self) -> StrEnum: ...

    @property
    def protocol_type(self) -> str | None: ...

    @property
    def empty_since_ms(self) -> int:
        """When the group last became empty (-1 if unknown): its offsets expire from then."""

    def is_empty(self) -> bool: ...

    def tombstones(self) -> list[Any]:
        """The records that delete the (empty) group."""

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation: int, version: int
    ) -> None:
        """Raise KafkaApiError unless this committer may commit now."""

    def validate_offset_fetch(self, member_id: str | None, epoch: int) -> None:
        """Raise KafkaApiError unless this reader may fetch (OffsetFetch v9+ naming a member)."""

    def subscribed_topics(self) -> set[str] | None:
        """Topics the group's live members subscribe to, when the group knows them (an
        OffsetDelete of such a topic is refused; its offsets do not expire)."""
