"""Per-group rebalance figures, counted by the pure core for the admin port's `/metrics`.

What an operator asks of a rebalance is how often it happens, how long until every member
works under the new assignment, and how much work moved. The core observes a group after
each request or timer that concerns it, on its virtual clock:

- a *rebalance* is a new group epoch (consumer and connect groups) or generation (classic);
- *reconcile time* runs from the first new epoch while the group was settled until it is
  settled again: every member at the target's epoch with nothing pending (Stable), or, for a
  classic group, Stable after its SyncGroup round;
- *target computations* counts server-side targets computed off the event loop whose result
  came back to the core, used or discarded because the group had moved on;
- *moved* counts items (partitions; connectors and tasks) whose owner at one settled point
  differs from their owner at the previous one. Classic groups count moves when their
  assignments are in ConsumerProtocol bytes; other classic protocols are opaque here.

Observing a settled group costs O(1); only a group in the middle of a rebalance is scanned.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance import consumer_protocol


@dataclass
class GroupFigures:
    group_type: str
    epoch: int = 0
    members: int = 0
    rebalances: int = 0
    moved: int = 0
    reconciles: int = 0
    reconcile_ms_total: int = 0
    last_reconcile_ms: int = 0
    started_ms: int | None = None  # when the rebalance under way began
    heartbeats: int = 0  # heartbeats answered (any protocol), to show what adaptive intervals cost
    computations: int = 0  # server-side target computations (consumer groups)
    # Each item's last owner seen at a settled point. An item nobody holds now (a lost worker's
    # work waiting out the scheduled delay, a partition between a cooperative revoke and its
    # assignment) keeps its last owner, so its next owner counts as a move. Bounded by the
    # items the group has held; forgotten with the group.
    owners: dict[Hashable, str] = field(default_factory=dict)


class GroupMetrics:
    def __init__(self) -> None:
        self.groups: dict[str, GroupFigures] = {}

    def seed(self, groups: dict[str, Any]) -> None:
        """Groups loaded from the log: their epochs are history, not rebalances seen now."""
        for group_id, group in groups.items():
            figures = self.groups[group_id] = GroupFigures(group.type_name, epoch=_epoch(group))
            figures.members = len(group.members)
            figures.owners = _owners(group) or {}

    def observe_groups(self, groups: dict[str, Any], group_ids: Any, now_ms: int) -> None:
        for group_id in sorted(group_ids):
            self.observe(group_id, groups.get(group_id), now_ms)

    def heartbeat(self, group_id: str) -> None:
        figures = self.groups.get(group_id)
        if figures is not None:
            figures.heartbeats += 1

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    def observe(self, group_id: str | None, group: Any, now_ms: int) -> None:
        if group_id is None:
            return
        if group is None or getattr(group.state, "value", "") == "Dead":
            self.forget(group_id)
            return
        figures = self.groups.get(group_id)
        if figures is None or figures.group_type != group.type_name:  # new, or converted
            previous = figures
            figures = self.groups[group_id] = GroupFigures(group.type_name)
            if previous is not None:
                figures.epoch, figures.owners = previous.epoch, previous.owners
                figures.rebalances, figures.moved = previous.rebalances, previous.moved
        figures.members = len(group.members)
        figures.computations = getattr(group, "computations", 0)
        epoch = _epoch(group)
        if epoch > figures.epoch:
            figures.rebalances += epoch - figures.epoch
            figures.epoch = epoch
            if figures.started_ms is None:
                figures.started_ms = now_ms
        if figures.started_ms is not None and group.state.value == "Stable":
            elapsed = now_ms - figures.started_ms
            figures.started_ms = None
            figures.reconciles += 1
            figures.reconcile_ms_total += elapsed
            figures.last_reconcile_ms = elapsed
            owners = _owners(group)
            if owners is not None:
                figures.moved += sum(
                    1 for item, owner in owners.items() if figures.owners.get(item, owner) != owner
                )
                figures.owners.update(owners)


def _epoch(group: Any) -> int:
    return int(group.generation if group.type_name == "classic" else group.group_epoch)


def _owners(group: Any) -> dict[Hashable, str] | None:
    if group.type_name != "classic":
        # A static member keeps its place under a new member id when its process restarts: the
        # owner is the instance, so its partitions do not count as moved.
        members = group.members
        return {
            item: _owner(getattr(members.get(member_id), "instance_id", None), member_id)
            for item, member_id in group.ownership.snapshot().items()
        }
    if group.protocol_type != "consumer":
        return None
    owners: dict[Hashable, str] = {}
    for member in group.members.values():
        for item in _consumer_assignment(member.assignment):
            owners[item] = _owner(member.group_instance_id, member.member_id)
    return owners


def _owner(instance_id: str | None, member_id: str) -> str:
    """Who holds an item across restarts: a static member's instance, else the member."""
    return instance_id or member_id


def _consumer_assignment(data: bytes) -> Iterable[tuple[str, int]]:
    try:
        return consumer_protocol.decode_assignment(data, keep_user_data=True)
    except ValueError:  # a custom protocol's bytes: nothing to count
        return []
