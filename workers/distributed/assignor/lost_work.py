"""Work of a worker that vanished: held for `scheduled.rebalance.max.delay.ms`, then handed out.

Kafka Connect's incremental cooperative assignor does not reassign a lost worker's
connectors and tasks at once: a worker that crashed or is being bounced usually comes back
within seconds, and moving its work twice (away, then back for balance) stops every one
of those tasks twice. So the computing worker holds that work — assigned to nobody — until
the delay ends; if the worker returns first (same worker id, a new member), it gets exactly
its work back and nothing else moves; once the delay has passed, the work goes to the
members below their share.

Two cases skip the delay, going beyond Kafka Connect where its users ask: a worker that
left on purpose (it wrote a `LEFT` marker before leaving) has its work reassigned at once,
and work whose last owner is unknown (new work, a new computing worker's first target
without status to go by) is assigned at once.

Pure: the caller passes the clock and what it knows of owners; `plan` returns the target,
what is still held, and when to look again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from connect_rebalance.work import Work
from workers.distributed.assignor.balanced_target import balanced_target


@dataclass
class HeldWork:
    """Work held for a lost worker: the worker's id and when the delay ends (seconds)."""

    held: dict[Work, tuple[str, float]] = field(default_factory=dict)

    def next_deadline(self) -> float | None:
        return min((deadline for _, deadline in self.held.values()), default=None)


@dataclass
class ComputingMemory:
    """What a computing worker remembers between the targets it computes: who last ran each
    item and the work it holds, valid only while it computed every target since."""

    last_owner: dict[Work, str] = field(default_factory=dict)
    held: HeldWork = field(default_factory=HeldWork)
    computed_for: int | None = None  # the group epoch of the last target computed here
    warming: dict[tuple[str, Work], float] = field(default_factory=dict)  # warm_handoff.Warming

    def recall(self, assignment_epoch: int, group_epoch: int) -> None:
        """Before computing the target for `group_epoch`: if the current target (of
        `assignment_epoch`) is not the last one computed here, another worker computed
        meanwhile, and a worker seen lost may have come back since. Forget, so the
        status topic decides again and a delay that ended elsewhere is not reused."""
        if assignment_epoch != self.computed_for:
            self.last_owner, self.held, self.warming = {}, HeldWork(), {}
        self.computed_for = group_epoch


def plan(
    members: Mapping[str, str],
    current: Mapping[str, frozenset[Work]],
    work: frozenset[Work],
    last_owner: Mapping[Work, str],
    left: set[str],
    held: HeldWork,
    now: float,
    delay_s: float,
) -> tuple[dict[str, frozenset[Work]], HeldWork]:
    """The next target: `members` maps member id -> worker id; `current` is each member's
    present target; `last_owner` the worker id that last ran an item; `left` the worker ids
    that left on purpose. Returns the per-member target and the work still held."""
    present = {worker: member for member, worker in members.items()}
    kept = {m: set(current.get(m, frozenset()) & work) for m in members}
    assigned = {item for items in kept.values() for item in items}
    still_held: dict[Work, tuple[str, float]] = {}
    for item in sorted(work - assigned):
        owner = last_owner.get(item)
        if owner is None or owner in left:
            continue  # new work, or a worker that left for good: assigned at once
        if owner in present:
            kept[present[owner]].add(item)  # the worker is back (a bounce): its work returns to it
            continue
        previous = held.held.get(item)
        deadline = previous[1] if previous is not None and previous[0] == owner else now + delay_s
        if now < deadline:
            still_held[item] = (owner, deadline)
    target = balanced_target(
        list(members), {m: frozenset(items) for m, items in kept.items()}, work - still_held.keys()
    )
    return target, HeldWork(still_held)
