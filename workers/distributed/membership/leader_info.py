"""What the computing worker tells every worker with its target: the assignment metadata
(`LeaderInfo`) both group protocols carry, on `connect` as the target's metadata and on
`classic` inside Kafka Connect's assignment. The membership decodes it; the leader's planning
(distributed/leader_planning.py) writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.work import Work


@dataclass
class LeaderInfo:
    """What the computing worker tells every worker with its target (assignment metadata)."""

    leader: str = ""
    leader_url: str = ""
    config_offset: int = 0
    delay_ms: int = 0
    assignor: str = ""  # the assignor that computed the target (classic: the embedded protocol)
    warm: list[tuple[str, int]] = field(default_factory=list)  # to prepare: another worker runs it

    def warm_work(self) -> frozenset[Work]:
        """What this worker is to prepare (distributed/warm_handoff.py), as work items."""
        return work_items(self.warm)

    def encode(self) -> bytes:
        return json.dumps(self.__dict__).encode()

    @classmethod
    def decode(cls, data: bytes) -> LeaderInfo:
        """What the computing worker sent; fields this worker does not know are left out."""
        try:
            fields = json.loads(data) if data else {}
            return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})
        except (ValueError, TypeError, AttributeError):
            return cls()


def work_items(listed: Any) -> frozenset[Work]:
    """Work items as JSON lists them ([connector, task] pairs); what does not parse, nothing."""
    try:
        return frozenset((str(c), int(t)) for c, t in listed or ())
    except (ValueError, TypeError):
        return frozenset()
