"""A sticky, balanced target: the incremental cooperative assignment of both group protocols.

Members keep what they hold up to their share (the fewest items move); what is left (new
work, lost work, a leaving member's work) goes to the members below their share. Beyond
balancing the totals, each connector's tasks spread across the workers, as Kafka Connect's
users ask: a member over its share gives up items of the connectors it holds most of first,
and free items go to the member holding the fewest of that connector's tasks (connector
instances likewise spread among themselves). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_rebalance.work import CONNECTOR, Work


def sticky_balanced(
    members: list[str], current: Mapping[str, frozenset[Work]], work: frozenset[Work]
) -> dict[str, frozenset[Work]]:
    if not members:
        return {}
    # The members holding the most get the larger shares, so the fewest items move.
    members = sorted(members, key=lambda m: (-len(current.get(m, frozenset()) & work), m))
    base, extra = divmod(len(work), len(members))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(members)}
    plan: dict[str, set[Work]] = {m: set() for m in members}
    taken: set[Work] = set()
    for m in members:
        for item in _keep_order(current.get(m, frozenset()) & work):
            if len(plan[m]) < quota[m] and item not in taken:
                plan[m].add(item)
                taken.add(item)
    # Free items are dealt out connector by connector, tasks first and connector instances
    # (lightweight) last, each to the member under its share with the fewest of that
    # connector's items, then the fewest items, then the next in turn: a connector's tasks go
    # round the members, so they spread, and the turn carries on to the next connector, so
    # the totals stay level and no connector is left to members with room for only a few.
    turn = 0
    for item in sorted(work - taken, key=lambda w: (w[1] == CONNECTOR, w[0], w[1])):
        under = [i for i, m in enumerate(members) if len(plan[m]) < quota[m]]
        chosen = min(under, key=lambda i: (*_crowding(plan[members[i]], item), (i - turn) % len(members)))
        plan[members[chosen]].add(item)
        turn = chosen + 1
    return {m: frozenset(items) for m, items in plan.items()}


def _keep_order(held: frozenset[Work]) -> list[Work]:
    """What a member keeps first when it holds more than its share: one item of each
    connector, then a second of each, ... so what it gives up comes from the connectors
    it holds most of (their tasks end up spread)."""
    rank: dict[str, int] = {}
    ordered = []
    for connector, task in sorted(held):
        ordered.append((rank.get(connector, 0), connector, task))
        rank[connector] = rank.get(connector, 0) + 1
    return [(connector, task) for _, connector, task in sorted(ordered)]


def _crowding(held: set[Work], item: Work) -> tuple[int, int, int]:
    """How crowded a member is for `item`: first by its connector's items of the same kind
    (so each connector's tasks spread), then by items of that kind (so connector instances
    and tasks each spread), then by everything it holds."""
    connector, task = item
    same_kind = [(c, t) for c, t in held if (t == CONNECTOR) == (task == CONNECTOR)]
    return sum(1 for c, _ in same_kind if c == connector), len(same_kind), len(held)
