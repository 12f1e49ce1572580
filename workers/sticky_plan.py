"""A sticky, balanced declarative target for the connect group protocol.

Members keep what they hold up to their share; what is left (new work, lost work, a
leaving member's work) goes to the members below their share. Each connector's tasks are
dealt out in turn, so they spread across workers. Pure; the herder uses it until a target is
computed by the full incremental cooperative assignor.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_rebalance.work import Work


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
        for item in sorted(current.get(m, frozenset()) & work):
            if len(plan[m]) < quota[m] and item not in taken:
                plan[m].add(item)
                taken.add(item)
    for item in sorted(work - taken, key=lambda w: (w[1], w[0])):  # task 0s first, spread per connector
        under = [m for m in members if len(plan[m]) < quota[m]]
        plan[min(under, key=lambda m: (sum(1 for c, _ in plan[m] if c == item[0]), len(plan[m]), m))].add(
            item
        )
    return {m: frozenset(items) for m, items in plan.items()}
