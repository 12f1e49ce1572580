"""Warm handoff: a task that moves between two running workers is prepared by its new owner
before its old owner lets it go, as Kafka Streams brings a warm-up replica up to date before
it moves a task (KIP-441). Kafka Connect moves a task at once, and the new owner starts it
from scratch; for a Spark task that start (the query's planner process, its source) is most
of the time nothing ingests.

The computing worker stages each target it computes (`stage`, pure):
- an item the assignor moves from one member of the group to another, that can be prepared
  (a Spark task whose source waits for a grant), stays with its current owner for now, and
  its new owner is told to prepare it (`warm` in its assignment metadata);
- the new owner starts its query gated and reports it warmed (its assignor metadata, with a
  new reason: the group's epoch moves on and the target is computed again);
- an item its new owner has warmed moves: the old owner is revoked, stops after its batch
  under way commits and acknowledges; the coordinator then assigns the item to the new
  owner, which grants its waiting query, and Spark reads the checkpoint as the old owner
  left it. Ownership changes only through revoke-then-assign.
- a warm-up not reported within `timeout_s` gives up: the item moves and starts cold.

Work that has no live owner (new work, a lost worker's) is assigned at once, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from connect_rebalance.work import Work

Warming = dict[tuple[str, Work], float]  # (new owner's member id, item) -> since (monotonic)


@dataclass(frozen=True)
class Staged:
    """A target with its preparable moves held back until their new owners have warmed them."""

    target: dict[str, frozenset[Work]]
    # member -> the items moving to it that another member still holds: to prepare, or
    # prepared and waiting for their old owner to let go
    warm: dict[str, frozenset[Work]]
    warming: Warming = field(default_factory=dict)

    def deadline(self, timeout_s: float) -> float | None:
        """When the first warm-up under way gives up (a new target is then due)."""
        return min(self.warming.values()) + timeout_s if self.warming else None


def stage(
    target: Mapping[str, frozenset[Work]],
    current: Mapping[str, frozenset[Work]],
    preparable: Callable[[Work], bool],
    warmed: Mapping[str, frozenset[Work]],
    warming: Warming,
    now: float,
    timeout_s: float,
) -> Staged:
    """`target` (member -> items, from the assignor) staged against `current` (what each member
    of the group holds now). `warmed`: what each member that prepares moved work reports
    prepared (one missing from it takes moved work cold); `warming`: the warm-ups under way
    since the last target (the computing worker's memory)."""
    owner = {item: member for member, items in current.items() for item in items}
    staged = {member: set(items) for member, items in target.items()}
    warm: dict[str, set[Work]] = {}
    still: Warming = {}
    for member, items in sorted(target.items()):
        for item in sorted(items):
            holder = owner.get(item)
            if holder is None or holder == member or holder not in staged or not preparable(item):
                continue
            if member not in warmed:
                continue  # a worker that does not prepare moved work: the item moves cold
            warm.setdefault(member, set()).add(item)  # moving to `member`: it keeps its prepared run
            if item in warmed[member]:
                continue  # ready: the old owner is revoked now
            since = warming.get((member, item), now)
            if now - since >= timeout_s:
                continue  # gave up waiting: the item moves and starts cold
            staged[member].discard(item)
            staged[holder].add(item)
            still[(member, item)] = since
    for member, ready in warmed.items():  # moved already, not let go of yet: kept prepared
        if ready & staged.get(member, set()):
            warm.setdefault(member, set()).update(ready & staged[member])
    return Staged(
        {m: frozenset(items) for m, items in staged.items()},
        {m: frozenset(items) for m, items in warm.items()},
        still,
    )
