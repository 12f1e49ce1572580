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

Each rebalance also goes on the group's timeline (rebalance_timeline.py): why it started,
what each member gave up and was given, when each reached the new epoch, and the time to
balance, which also feeds a histogram per group type. Totals per group type (rebalances, the
histogram) outlive the groups they counted, as counters must.

Observing a settled group costs O(1); only a group in the middle of a rebalance is scanned.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance import consumer_protocol
from connect_rebalance.work import work_name
from coordinator.groups.connect_records import ConnectCurrentAssignmentRecord
from coordinator.groups.rebalance_timeline import OpenRebalance, Rebalance, Timelines
from coordinator.groups.reconciliation import MemberState
from coordinator.groups.records import CurrentAssignmentRecord
from coordinator.groups.requests import Outcome

GROUP_TYPES = ("classic", "consumer", "connect")
# Time-to-balance histogram buckets (seconds): a settled group's next heartbeat to a rebalance
# waiting out a session timeout or a scheduled delay.
BALANCE_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_BUCKETS_MS = tuple(round(b * 1000) for b in BALANCE_BUCKETS_S)
_ASSIGNMENT_RECORDS = (CurrentAssignmentRecord, ConnectCurrentAssignmentRecord)


@dataclass
class GroupFigures:
    group_type: str
    epoch: int = 0
    members: int = 0
    state: str = ""
    rebalances: int = 0
    moved: int = 0
    paused: int = 0  # items revoked over the rebalances seen (each entry's `paused`, summed)
    last_paused: int = 0
    reconciles: int = 0
    reconcile_ms_total: int = 0
    last_reconcile_ms: int = 0
    rebalance: OpenRebalance | None = None  # the rebalance under way
    heartbeats: int = 0  # heartbeats answered (any protocol), to show what adaptive intervals cost
    computations: int = 0  # server-side target computations (consumer groups)
    # Each item's last holder seen at a settled point. An item nobody holds now (a lost worker's
    # work waiting out the scheduled delay, a partition between a cooperative revoke and its
    # assignment) keeps its last owner, so its next owner counts as a move; `unheld` names the
    # items nobody held at the last settled point. Bounded by the items the group has held;
    # forgotten with the group.
    owners: dict[Hashable, str] = field(default_factory=dict)
    unheld: set[Hashable] = field(default_factory=set)
    # Member id -> (holder, client id) of the members at the last settled point and of those
    # seen since: what names a member that left in the rebalance under way.
    known: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def started_ms(self) -> int | None:
        """When the rebalance under way began (None: the group is settled)."""
        return None if self.rebalance is None else self.rebalance.started_ms


@dataclass
class BalanceHistogram:
    """Times to balance of one group type: counts per bucket (the last is +Inf) and their sum."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(_BUCKETS_MS) + 1))
    sum_ms: int = 0

    def observe(self, elapsed_ms: int) -> None:
        self.counts[bisect_left(_BUCKETS_MS, elapsed_ms)] += 1
        self.sum_ms += elapsed_ms


class GroupMetrics:
    def __init__(
        self, timeline_size: int = 20, topic_name: Callable[[str], str | None] | None = None
    ) -> None:
        self.groups: dict[str, GroupFigures] = {}
        self.timelines = Timelines(timeline_size)
        self._topic_name = topic_name
        # Per group type, over every group ever hosted (Kafka's counts are the coordinator's).
        self.rebalances_by_type: Counter[str] = Counter()
        self.balanced_by_type: dict[str, BalanceHistogram] = {t: BalanceHistogram() for t in GROUP_TYPES}

    def seed(self, groups: dict[str, Any]) -> None:
        """Groups loaded from the log: their epochs are history, not rebalances seen now."""
        for group_id, group in groups.items():
            figures = self.groups[group_id] = GroupFigures(group.type_name, epoch=_epoch(group))
            figures.members = len(group.members)
            figures.state = group.state.value
            figures.owners = _owners(group) or {}
            figures.known = _known(group)

    def observe_groups(
        self, groups: dict[str, Any], group_ids: Any, now_ms: int, outcome: Outcome | None = None
    ) -> None:
        for group_id in sorted(group_ids):
            self.observe(group_id, groups.get(group_id), now_ms, outcome)

    def heartbeat(self, group_id: str) -> None:
        figures = self.groups.get(group_id)
        if figures is not None:
            figures.heartbeats += 1

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        self.timelines.forget(group_id)

    def timeline(self, group_id: str) -> dict[str, Any] | None:
        """The group's timeline as the admin port serves it (None: no such group): its last
        rebalances, oldest first, and the one under way with what is known of it so far."""
        figures = self.groups.get(group_id)
        if figures is None:
            return None
        under_way = figures.rebalance
        return {
            "group_id": group_id,
            "group_type": figures.group_type,
            "state": figures.state,
            "epoch": figures.epoch,
            "rebalances": [entry.as_json() for entry in self.timelines.of(group_id)],
            "under_way": None if under_way is None else {
                "from_epoch": under_way.from_epoch,
                "to_epoch": figures.epoch,
                "started_ms": under_way.started_ms,
                "triggers": [cause.as_json() for cause in under_way.triggers],
                "reached_ms": {
                    figures.known.get(member_id, (member_id, ""))[0]: at
                    for member_id, at in under_way.reached.items()
                },
            },
        }  # fmt: skip

    def observe(self, group_id: str | None, group: Any, now_ms: int, outcome: Outcome | None = None) -> None:
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
                figures.epoch, figures.owners, figures.unheld = (
                    previous.epoch,
                    previous.owners,
                    previous.unheld,
                )
                figures.rebalances, figures.moved, figures.paused = (
                    previous.rebalances, previous.moved, previous.paused
                )  # fmt: skip
                figures.rebalance, figures.known = previous.rebalance, previous.known
        figures.members = len(group.members)
        figures.state = group.state.value
        figures.computations = getattr(group, "computations", 0)
        epoch = _epoch(group)
        if epoch < figures.epoch:  # its outcome could not be written: what it started never was
            figures.epoch, figures.rebalance = epoch, None
        if epoch > figures.epoch:
            figures.rebalances += epoch - figures.epoch
            self.rebalances_by_type[figures.group_type] += epoch - figures.epoch
            if figures.rebalance is None:
                figures.rebalance = OpenRebalance(figures.epoch, now_ms)
            triggers = (outcome.triggers or {}).get(group_id, []) if outcome is not None else []
            causes = [(t.cause, self._holder(figures, group, t.member_id)) for t in triggers]
            figures.rebalance.triggered(causes, epoch, now_ms)
            figures.epoch = epoch
        if figures.rebalance is None:
            return
        if outcome is not None:
            self._note_reached(figures, group, group_id, outcome, now_ms)
        if group.state.value == "Stable":
            self._settled(group_id, figures, group, now_ms)

    def _holder(self, figures: GroupFigures, group: Any, member_id: str) -> str:
        if not member_id:
            return ""
        member = group.members.get(member_id)
        if member is not None:
            figures.known[member_id] = _identity(group, member)
        return figures.known.get(member_id, (member_id, ""))[0]

    def _note_reached(
        self, figures: GroupFigures, group: Any, group_id: str, outcome: Outcome, now_ms: int
    ) -> None:
        """A member reaches the new epoch with the assignment record that puts it there, Stable."""
        rebalance = figures.rebalance
        assert rebalance is not None
        for record in outcome.records:
            if isinstance(record, _ASSIGNMENT_RECORDS) and record.group_id == group_id:
                value = record.value
                if (
                    value is not None
                    and value.state == MemberState.STABLE
                    and value.member_epoch > rebalance.from_epoch
                ):
                    rebalance.member_reached(record.member_id, now_ms)
                    member = group.members.get(record.member_id)
                    if member is not None:
                        figures.known[record.member_id] = _identity(group, member)

    def _settled(self, group_id: str, figures: GroupFigures, group: Any, now_ms: int) -> None:
        rebalance = figures.rebalance
        assert rebalance is not None
        figures.rebalance = None
        elapsed = now_ms - rebalance.started_ms
        figures.reconciles += 1
        figures.reconcile_ms_total += elapsed
        figures.last_reconcile_ms = elapsed
        owners = _owners(group)
        before = {item: owner for item, owner in figures.owners.items() if item not in figures.unheld}
        if owners is not None:
            figures.moved += sum(
                1 for item, owner in owners.items() if figures.owners.get(item, owner) != owner
            )
            figures.owners.update(owners)
            figures.unheld = {item for item in figures.owners if item not in owners}
        present = _known(group)
        entry = rebalance.settled(
            figures.group_type, figures.epoch, now_ms, before, owners if owners is not None else before,
            present, {holder: client for holder, client in figures.known.values()},
            self._item_name(figures.group_type),
        )  # fmt: skip
        figures.known = present
        self._record(group_id, figures, entry)

    def _record(self, group_id: str, figures: GroupFigures, entry: Rebalance) -> None:
        """One finished rebalance: on the timeline, and in the figures the metrics show."""
        self.timelines.add(group_id, entry)
        self.balanced_by_type[figures.group_type].observe(entry.time_to_balance_ms)
        figures.last_paused = entry.paused
        figures.paused += entry.paused

    def _item_name(self, group_type: str) -> Callable[[Hashable], str]:
        if group_type == "connect":
            return work_name  # type: ignore[return-value]
        if group_type == "consumer" and self._topic_name is not None:
            topic_name = self._topic_name
            return lambda item: f"{topic_name(item[0]) or item[0]}-{item[1]}"  # type: ignore[index]
        return lambda item: f"{item[0]}-{item[1]}"  # type: ignore[index]


def _epoch(group: Any) -> int:
    return int(group.generation if group.type_name == "classic" else group.group_epoch)


def _identity(group: Any, member: Any) -> tuple[str, str]:
    """(holder, client id) of a member: who holds its items across restarts, and its client."""
    if group.type_name == "classic":
        return _owner(member.group_instance_id, member.member_id), member.client_id
    return _owner(member.instance_id, member.member_id), member.client_id


def _known(group: Any) -> dict[str, tuple[str, str]]:
    return {member_id: _identity(group, member) for member_id, member in group.members.items()}


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
