"""What goes into the group coordinator core and what comes out of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.groups.records import Record

# Why a group's epoch (a classic group's generation) was bumped: what the request or deadline
# that bumped it was, as the core knew it then. Not a record: the rebalance timeline keeps it.
JOIN = "join"
LEAVE = "leave"
SESSION_EXPIRY = "session expiry"
REBALANCE_TIMEOUT = "rebalance timeout"  # a member did not revoke (or rejoin, or sync) in time
FENCED = "fenced"  # a connect worker heartbeating at a wrong epoch is removed
SUBSCRIPTION_CHANGE = "subscription change"  # topics, regex or assignors (classic: its protocols)
CONFIG_CHANGE = "config change"  # a connect worker's assignor metadata: the connectors' configuration
STATIC_REPLACEMENT = "static replacement"
METADATA_CHANGE = "metadata change"  # the partitions of a subscribed topic
CONVERSION = "conversion"  # the group changed type (online migration)


@dataclass(frozen=True, slots=True)
class Trigger:
    """What bumped a group's epoch, and the member it concerned ("" when none)."""

    cause: str
    member_id: str = ""


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """A decoded request, with an id the answer will be addressed to."""

    request_id: int
    api_key: int
    version: int
    body: Any
    client_id: str = ""
    client_host: str = ""


@dataclass
class Outcome:
    """Answers (response fields by request id) and records to persist before releasing them.

    A request may be answered in a later outcome than its own (a parked JoinGroup), and one
    outcome may answer many requests (everyone waiting for a rebalance to complete).
    """

    replies: dict[int, dict[str, Any]] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    effects: list[Any] = field(default_factory=list)  # work for the IO shell (consumer.ComputeTarget)
    journal: Any = field(default=None, repr=False, compare=False)  # what takes the outcome back
    # The groups a deadline or a computed target changed (a request's are in its body).
    groups: set[str] | None = None
    # Why each group's epoch moved in this outcome, in order (the rebalance timeline reads them).
    triggers: dict[str, list[Trigger]] | None = None  # made by the first: most outcomes have none

    def reply(self, request_id: int, fields: dict[str, Any]) -> None:
        self.replies[request_id] = fields
