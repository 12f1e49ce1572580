"""Client-side assignment: the coordinator picks a member to compute the group's target.

Shared by every group type whose target is computed by a member rather than by the
coordinator (`connect` groups always; consumer groups would through KIP-848's
Prepare/Install). Pure functions and one small state holder; no IO, no clock.

The rules (the connect group protocol draft, "Assignor Selection", "Worker Selection",
"Assignment Validation"):
- the assignor is one every member supports with overlapping version ranges, taken in the
  priority order of the longest-standing member (all members of a cluster normally list the
  same assignors in the same order);
- the computing member is one whose version range for that assignor covers every other
  member's range, so that it can read everyone's metadata; the previous computing member
  is kept while it still qualifies (Kafka Connect's leader is sticky too); a member that
  failed to install within its rebalance timeout is passed over until some member installs;
- an installed assignment is checked against the group as it was when the member prepared
  it: every member it names was in the group, no item is assigned twice, and the items
  assigned are exactly the items it declares the target covers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class AssignorVersions(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def minimum_version(self) -> int: ...
    @property
    def maximum_version(self) -> int: ...


def common_assignor(members: Sequence[Sequence[AssignorVersions]]) -> tuple[str, int, int] | None:
    """(name, lowest, highest version) of the assignor to use, or None if members share none.

    `members` lists each member's assignors in priority order, oldest member first. The
    version span is the union of the members' ranges; the ranges must overlap pairwise
    (some version every member can read and write).
    """
    if not members:
        return None
    for candidate in members[0]:
        ranges = [_range_of(assignors, candidate.name) for assignors in members]
        if any(r is None for r in ranges):
            continue
        lows = [r[0] for r in ranges if r is not None]
        highs = [r[1] for r in ranges if r is not None]
        if max(lows) <= min(highs):
            return candidate.name, min(lows), max(highs)
    return None


def _range_of(assignors: Sequence[AssignorVersions], name: str) -> tuple[int, int] | None:
    found = next((a for a in assignors if a.name == name), None)
    return None if found is None else (found.minimum_version, found.maximum_version)


def computing_candidates(
    members: Mapping[str, Sequence[AssignorVersions]], assignor: str, lowest: int, highest: int
) -> list[str]:
    """Members able to compute for everyone: their range for `assignor` covers [lowest, highest]."""
    chosen = []
    for member_id, assignors in members.items():
        versions = _range_of(assignors, assignor)
        if versions is not None and versions[0] <= lowest and versions[1] >= highest:
            chosen.append(member_id)
    return chosen


def install_problem(
    covered: frozenset[Hashable],
    targets: Mapping[str, frozenset[Hashable]],
    members: frozenset[str],
) -> str | None:
    """Why an installed assignment is invalid, or None if it is valid."""
    unknown = sorted(set(targets) - members)
    if unknown:
        return f"members {unknown} were not in the group the assignment was computed for"
    seen: dict[Hashable, str] = {}
    for member_id, items in targets.items():
        for item in items:
            if item in seen:
                return f"{item!r} is assigned to both {seen[item]} and {member_id}"
            seen[item] = member_id
    undeclared = set(seen) - covered
    if undeclared:
        return f"{sorted(undeclared, key=repr)[:5]!r} are assigned but not declared as covered"
    missing = covered - set(seen)
    if missing:
        return f"{sorted(missing, key=repr)[:5]!r} are declared as covered but not assigned"
    return None


@dataclass
class ComputeRound:
    """Who computes the next target, and the group as it was when they prepared it."""

    member_id: str | None = None
    prepared_epoch: int = -1
    prepared_members: frozenset[str] = frozenset()
    previous: str | None = None  # who computed the current target
    passed_over: set[str] = field(default_factory=set)

    def choose(self, candidates: list[str]) -> str | None:
        """Keep the current choice or the previous computing member while they qualify."""
        eligible = [c for c in candidates if c not in self.passed_over] or candidates
        sticky = [c for c in (self.member_id, self.previous) if c is not None and c in eligible]
        chosen = sticky[0] if sticky else (eligible[0] if eligible else None)
        if chosen != self.member_id:
            self.member_id = chosen
            self.prepared_epoch, self.prepared_members = -1, frozenset()
        return chosen

    def prepared(self, epoch: int, members: frozenset[str]) -> None:
        self.prepared_epoch, self.prepared_members = epoch, members

    def installed(self, member_id: str) -> None:
        self.member_id, self.previous = None, member_id
        self.prepared_epoch, self.prepared_members = -1, frozenset()
        self.passed_over.clear()

    def timed_out(self) -> None:
        if self.member_id is not None:
            self.passed_over.add(self.member_id)
        self.member_id = None
        self.prepared_epoch, self.prepared_members = -1, frozenset()

    def forget(self, member_id: str) -> None:
        """A member left: it can no longer compute (its round, if any, is over)."""
        if self.member_id == member_id:
            self.member_id = None
            self.prepared_epoch, self.prepared_members = -1, frozenset()
        if self.previous == member_id:
            self.previous = None
        self.passed_over.discard(member_id)
