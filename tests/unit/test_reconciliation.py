"""The reconciliation engine: revoke before assign, epochs, the lost-response case, and a
property test that no item is ever held twice and that a quiet group converges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.reconciliation import MemberAssignment, MemberState, Ownership, reconcile

pytestmark = pytest.mark.unit
S = frozenset


def test_a_member_joins_and_an_existing_member_revokes_before_the_newcomer_gets_anything() -> None:
    ownership: Ownership[int] = Ownership()
    a = reconcile(MemberAssignment.joining(), 1, S({0, 1, 2, 3}), S(), ownership.held_by_others("A"))
    ownership.update("A", None, a)
    assert (a.state, a.member_epoch, a.assigned) == (MemberState.STABLE, 1, S({0, 1, 2, 3}))
    # B joins: epoch 2, target A: {0, 1}, B: {2, 3}.
    a2 = reconcile(a, 2, S({0, 1}), S({0, 1, 2, 3}), ownership.held_by_others("A"))
    ownership.update("A", a, a2)
    assert (a2.state, a2.member_epoch, a2.assigned, a2.pending_revocation) == (
        MemberState.UNREVOKED, 1, S({0, 1}), S({2, 3}))  # fmt: skip
    b = reconcile(MemberAssignment.joining(), 2, S({2, 3}), S(), ownership.held_by_others("B"))
    ownership.update("B", None, b)
    assert (b.state, b.member_epoch, b.assigned) == (MemberState.UNRELEASED, 2, S())
    still = reconcile(a2, 2, S({0, 1}), None, ownership.held_by_others("A"))
    assert still is a2, "a heartbeat without owned partitions does not acknowledge a revocation"
    a3 = reconcile(a2, 2, S({0, 1}), S({0, 1}), ownership.held_by_others("A"))
    ownership.update("A", a2, a3)
    assert (a3.state, a3.member_epoch, a3.previous_epoch, a3.assigned) == (
        MemberState.STABLE,
        2,
        1,
        S({0, 1}),
    )
    b2 = reconcile(b, 2, S({2, 3}), S(), ownership.held_by_others("B"))
    ownership.update("B", b, b2)
    assert (b2.state, b2.assigned) == (MemberState.STABLE, S({2, 3}))


def test_a_member_that_already_revoked_skips_the_unrevoked_state() -> None:
    """The lost-response case: the member revoked, but never saw the answer that said so."""
    start = MemberAssignment(MemberState.STABLE, 4, 3, S({"t0", "t1"}), S())
    nxt = reconcile(start, 5, S({"t0"}), S({"t0"}), lambda item: False)
    assert (nxt.state, nxt.member_epoch, nxt.assigned) == (MemberState.STABLE, 5, S({"t0"}))


def test_a_stable_member_at_the_target_epoch_is_left_alone() -> None:
    stable = MemberAssignment(MemberState.STABLE, 7, 6, S({1}), S())
    assert reconcile(stable, 7, S({1, 2}), None, lambda item: False) is stable


class Group:
    """A simulated group: target = items dealt round-robin over the sorted member ids."""

    def __init__(self, items: int) -> None:
        self.items = S(range(items))
        self.epoch = 0
        self.members: dict[str, MemberAssignment[int]] = {}
        self.ownership: Ownership[int] = Ownership()

    def target_of(self, member_id: str) -> frozenset[int]:
        ids = sorted(self.members)
        return S(i for i in self.items if ids[i % len(ids)] == member_id)

    def join(self, member_id: str) -> None:
        if member_id not in self.members:
            self.members[member_id] = MemberAssignment.joining()
            self.epoch += 1

    def leave(self, member_id: str) -> None:
        if member_id in self.members:
            self.ownership.update(member_id, self.members.pop(member_id), None)
            self.epoch += 1

    def heartbeat(self, member_id: str, acknowledge: bool, reports: bool) -> None:
        current = self.members[member_id]
        owned = (current.assigned if acknowledge else current.held) if reports else None
        after = reconcile(current, self.epoch, self.target_of(member_id), owned,
                          self.ownership.held_by_others(member_id))  # fmt: skip
        self.ownership.update(member_id, current, after)
        self.members[member_id] = after

    def check_no_item_held_twice(self) -> None:
        seen: dict[int, str] = {}
        for member_id, state in self.members.items():
            for item in state.held:
                assert item not in seen, f"{item} held by {seen[item]} and {member_id}"
                seen[item] = member_id


events = st.lists(
    st.tuples(
        st.sampled_from(["join", "leave", "heartbeat"]),
        st.sampled_from("ABCDE"),
        st.booleans(),
        st.booleans(),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(items=st.integers(min_value=0, max_value=12), script=events)
def test_no_item_is_held_twice_and_a_quiet_group_converges_to_its_target(items: int, script) -> None:  # type: ignore[no-untyped-def]
    group = Group(items)
    for kind, member, acknowledge, reports in script:
        if kind == "join":
            group.join(member)
        elif kind == "leave":
            group.leave(member)
        elif member in group.members:
            group.heartbeat(member, acknowledge, reports)
        group.check_no_item_held_twice()
    for _ in range(4):  # quiet: every member heartbeats and acknowledges, a few rounds
        for member in sorted(group.members):
            group.heartbeat(member, acknowledge=True, reports=True)
            group.check_no_item_held_twice()
    for member, state in group.members.items():
        assert (state.state, state.member_epoch) == (MemberState.STABLE, group.epoch)
        assert state.assigned == group.target_of(member) and not state.pending_revocation
    if group.members:
        assert S().union(*(s.assigned for s in group.members.values())) == group.items
