"""What goes into the group coordinator core and what comes out of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .records import Record


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

    def reply(self, request_id: int, fields: dict[str, Any]) -> None:
        self.replies[request_id] = fields
