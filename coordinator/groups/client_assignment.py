"""Client-side assignment: the coordinator picks a member to compute the group's target.

Shared by every group type whose target is computed by a member rather than by the
coordinator (`connect` groups always; consumer groups whose members all declare client
assignors, through KIP-848's Prepare/Install). Pure functions and one small state holder;
no IO, no clock.

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

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from connect_rebalance.errors import ErrorCode, KafkaApiError

Group = TypeVar("Group")


class AssignorVersions(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def minimum_version(self) -> int: ...
    @property
    def maximum_version(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ClientAssignorSpec:
    """One client-side assignor a member offers, as its heartbeat declared it."""

    name: str
    minimum_version: int
    maximum_version: int
    reason: int
    metadata_version: int
    metadata: bytes


def assignor_specs(entries: Iterable[Any]) -> tuple[ClientAssignorSpec, ...]:
    """Specs from decoded `ClientAssignors` entries (heartbeat requests and member records).

    The metadata field is `Metadata` in the connect group schemas and `MetadataBytes` in
    KIP-848's consumer group schemas; both are read.
    """
    return tuple(
        ClientAssignorSpec(
            a.name, a.minimum_version, a.maximum_version, a.reason, a.metadata_version,
            bytes(getattr(a, "metadata_bytes", None) or getattr(a, "metadata", None) or b""),
        )
        for a in entries
    )  # fmt: skip


def assignors_problem(entries: Iterable[Any]) -> str | None:
    """Why declared client assignors are malformed (INVALID_REQUEST), or None (the KIP's rules)."""
    for assignor in entries:
        if not assignor.name.strip():
            return "Assignor.Name can't be empty."
        if assignor.minimum_version < -1:
            return f"Assignor {assignor.name}: MinimumVersion must be >= -1."
        if assignor.maximum_version < 0 or assignor.maximum_version < assignor.minimum_version:
            return f"Assignor {assignor.name}: MaximumVersion must be >= 0 and >= MinimumVersion."
        if not assignor.minimum_version <= assignor.metadata_version <= assignor.maximum_version:
            return (
                f"Assignor {assignor.name}: MetadataVersion must lie between MinimumVersion and "
                "MaximumVersion."
            )
    return None


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


def choose_computer(
    compute: ComputeRound, members: Mapping[str, Sequence[AssignorVersions]]
) -> tuple[str, str] | None:
    """(chosen member, assignor) if a member is newly chosen to compute (its timer starts now).

    Nothing changes when the members share no assignor, or the current choice still qualifies.
    """
    selection = common_assignor(list(members.values()))
    if selection is None:
        return None
    current = compute.member_id
    chosen = compute.choose(computing_candidates(members, *selection))
    return (chosen, selection[0]) if chosen is not None and chosen != current else None


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


def computing_member(
    groups: Mapping[str, object], group_type: type[Group], body: Any, kind: str, epoch_error: ErrorCode
) -> tuple[Group, Any]:
    """The checks Prepare and Install share, in the KIP's order: the ids, the group, the member,
    its epoch (`epoch_error` if it differs), and its turn (UNKNOWN_MEMBER_ID if not chosen).

    A group type here has `members` (each with `assignment.member_epoch`), `compute`, and
    the group and assignment epochs.
    """
    if not (body.group_id or "").strip():
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if not (body.member_id or "").strip():
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if body.member_epoch < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "MemberEpoch must be >= 0.")
    group: Any = groups.get(body.group_id)
    if not isinstance(group, group_type):
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"{kind} {body.group_id} not found.")
    member = group.members.get(body.member_id)
    if member is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not in the group.")
    if body.member_epoch != member.assignment.member_epoch:
        raise KafkaApiError(
            epoch_error, f"Epoch {body.member_epoch} is not the member's {member.assignment.member_epoch}."
        )
    if group.compute.member_id != member.member_id or group.group_epoch <= group.assignment_epoch:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not chosen to compute the assignment."
        )
    return group, member


def installed_epoch(compute: ComputeRound, body: Any, prepare_api: str) -> int:
    """The group epoch an Install is validated against, after the checks every group type shares:
    the member prepared, computed for the epoch it prepared, and names each member once."""
    prepared = compute.prepared_epoch
    if prepared < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Call {prepare_api} before installing an assignment.")
    if body.group_epoch != prepared:
        raise KafkaApiError(
            ErrorCode.INVALID_ASSIGNMENT,
            f"The assignment was computed for group epoch {body.group_epoch}; the group was prepared "
            f"at epoch {prepared}.",
        )
    ids = [m.member_id for m in body.members]
    if len(ids) != len(set(ids)):
        raise KafkaApiError(ErrorCode.INVALID_ASSIGNMENT, "A member appears twice in the assignment.")
    return prepared


@dataclass
class ComputeRound:
    """Who computes the next target, and the group as it was when they prepared it."""

    member_id: str | None = None
    prepared_epoch: int = -1
    prepared_members: frozenset[str] = frozenset()
    prepared_assignor: str = ""  # the assignor selected when the member prepared
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

    def should_compute(self, member_id: str, group_epoch: int, assignment_epoch: int) -> bool:
        """The heartbeat flag: the member is chosen, a new target is due, and it has not prepared it yet."""
        due = group_epoch > assignment_epoch and self.prepared_epoch < group_epoch
        return due and self.member_id == member_id

    def prepared(self, epoch: int, members: frozenset[str], assignor: str = "") -> None:
        self.prepared_epoch, self.prepared_members, self.prepared_assignor = epoch, members, assignor

    def installed(self, member_id: str) -> None:
        self.member_id, self.previous = None, member_id
        self.prepared_epoch, self.prepared_members = -1, frozenset()
        self.passed_over.clear()

    def timed_out(self) -> None:
        if self.member_id is not None:
            self.passed_over.add(self.member_id)
        self.abandon()

    def abandon(self) -> None:
        """The target is no longer computed by a member (the group moved to a server-side assignor)."""
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
