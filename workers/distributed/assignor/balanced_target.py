"""Kafka Connect's balance rule as a sticky target: connectors and tasks balanced apart.

Rules (what every target this returns satisfies, whatever the members held before):
- every item of `work` is in exactly one member's target;
- connectors are balanced: members' connector counts differ by at most one;
- tasks are balanced: members' task counts differ by at most one;
- each connector's tasks are spread: for every connector, members' counts of its tasks
  differ by at most one;
- a balanced assignment is its own target (nothing moves without a reason), and otherwise
  members keep as much of what they hold as the three balances allow.

Kafka Connect's `IncrementalCooperativeAssignor` balances connectors and tasks separately,
each to within one across workers; its users also ask that one connector's tasks not pile
up on one worker, which this makes a rule.

Theory of operation. Connectors are one pool: each member keeps up to its share (the
members holding the most get the larger shares), and free connectors go to the members
under theirs. Tasks are counted per connector: a connector with `n` tasks on `W` members
gives each member `n // W` of them, and `n % W` members one more (its *extras*). Task
balance is then only a matter of who gets the extras: every member must get the same
number of extras in all, within one. Which member gets which connector's extra is chosen
to keep what members hold (a member already holding more than `n // W` of a connector's
tasks keeps one of its extras while it has room); when those choices leave a connector
without room on enough distinct members, one swap with another connector makes room (the
swap always exists; `_place_extras` says why). Each member then keeps up to its count
of every connector's tasks, and free tasks go to the members short of theirs.

Pure and deterministic: no IO, no clock; ties are broken by member id and task number.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from connect_rebalance.work import CONNECTOR, Work


def balanced_target(
    members: Iterable[str], current: Mapping[str, frozenset[Work]], work: frozenset[Work]
) -> dict[str, frozenset[Work]]:
    """Each member's target: `current` is what each holds now (items outside `work` are
    dropped, an item held twice is kept by one holder), `work` what must be assigned."""
    names = sorted(set(members))
    if not names:
        return {}
    held = _claims(names, current, work)
    target: dict[str, set[Work]] = {m: set() for m in names}
    connectors = sorted(item for item in work if item[1] == CONNECTOR)
    _deal(names, {m: [i for i in held[m] if i[1] == CONNECTOR] for m in names}, connectors, target)
    tasks_of: dict[str, list[Work]] = defaultdict(list)
    for item in sorted(work):
        if item[1] != CONNECTOR:
            tasks_of[item[0]].append(item)
    holding = {m: _tasks_by_connector(held[m]) for m in names}
    placed = {m: len(target[m]) for m in names}  # connectors: members with fewer get extras first
    extras = _place_extras(names, {c: len(t) for c, t in tasks_of.items()}, holding, placed)
    for connector, tasks in tasks_of.items():
        base = len(tasks) // len(names)
        counts = {m: base + (1 if m in extras[connector] else 0) for m in names}
        _fill(names, {m: holding[m].get(connector, []) for m in names}, tasks, counts, target)
    return {m: frozenset(items) for m, items in target.items()}


def _claims(
    names: list[str], current: Mapping[str, frozenset[Work]], work: frozenset[Work]
) -> dict[str, list[Work]]:
    """What each member holds of `work`, each item once: an item claimed by several members
    (a duplicated claim) stays with the claimant holding the fewest items of its kind."""
    claimants: dict[Work, list[str]] = defaultdict(list)
    for m in names:
        for item in current.get(m, frozenset()) & work:
            claimants[item].append(m)
    kind_count = {
        m: (
            sum(1 for i in current.get(m, frozenset()) & work if i[1] == CONNECTOR),
            sum(1 for i in current.get(m, frozenset()) & work if i[1] != CONNECTOR),
        )
        for m in names
    }
    held: dict[str, list[Work]] = {m: [] for m in names}
    for item in sorted(claimants):
        kind = 0 if item[1] == CONNECTOR else 1
        keeper = min(claimants[item], key=lambda m: (kind_count[m][kind], m))
        held[keeper].append(item)
    return held


def _deal(
    names: list[str], held: Mapping[str, list[Work]], items: list[Work], target: dict[str, set[Work]]
) -> None:
    """One pool balanced within one: the members holding the most get the larger shares."""
    base, extra = divmod(len(items), len(names))
    by_holding = sorted(names, key=lambda m: (-len(held[m]), m))
    share = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    _fill(names, {m: sorted(held[m]) for m in names}, items, share, target)


def _tasks_by_connector(items: list[Work]) -> dict[str, list[Work]]:
    grouped: dict[str, list[Work]] = defaultdict(list)
    for item in sorted(items):
        if item[1] != CONNECTOR:
            grouped[item[0]].append(item)
    return grouped


def _place_extras(
    names: list[str],
    task_counts: Mapping[str, int],
    holding: Mapping[str, Mapping[str, list[Work]]],
    placed: Mapping[str, int],
) -> dict[str, set[str]]:
    """For each connector with `n % W` extra tasks, the members that run one more of them.

    Each member gets `R // W` or `R // W + 1` extras in all (`R`: the extras of every
    connector), so tasks stay balanced. First, members keep the extras they hold (more than
    `n // W` of a connector's tasks): the members holding the most of a connector keep its
    extras, and a member with more than it has room for lets go of the connectors fewest
    others have let go of, so that what is let go can be taken up by one member (a joining
    one) with nobody else moving. Then each connector's missing extras go to the members with
    the most room that do not have one of its extras yet. Where that leaves a choice, members
    with fewer items `placed` already come first, so totals stay as level as they can.

    If a connector still needs a member while every member with room has one of its extras,
    one swap makes room: take a full member `b` without this connector's extra and a member
    `a` with room (which has one); `b` has at least as many extras as `a`, and `a`'s count
    includes this connector, so some other connector gave `b` an extra and not `a`: that
    extra moves from `b` to `a`, and `b` takes this one.
    """
    width = len(names)
    wanted = {c: n % width for c, n in task_counts.items() if n % width}
    base, extra = divmod(sum(wanted.values()), width)
    holders = {
        c: sorted(
            (m for m in names if len(holding[m].get(c, ())) > task_counts[c] // width),
            key=lambda m: (-len(holding[m].get(c, ())), m),
        )[: wanted[c]]
        for c in wanted
    }
    keeps: dict[str, list[str]] = {m: [] for m in names}
    for c, members in holders.items():
        for m in members:
            keeps[m].append(c)
    order = sorted(names, key=lambda m: (-len(keeps[m]), -sum(map(len, holding[m].values())), placed[m], m))
    room = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
    chosen: dict[str, set[str]] = {c: set() for c in task_counts}
    let_go: dict[str, int] = defaultdict(int)
    for m in sorted(names, key=lambda m: (room[m] - len(keeps[m]), m)):
        over = max(len(keeps[m]) - room[m], 0)
        dropped = sorted(keeps[m], key=lambda c: (let_go[c], c))[:over]
        for c in dropped:
            let_go[c] += 1
        for c in keeps[m]:
            if c not in dropped:
                chosen[c].add(m)
                room[m] -= 1
    for c in sorted(wanted):
        for m in sorted(names, key=lambda m: (-room[m], placed[m], m)):
            if len(chosen[c]) == wanted[c] or room[m] == 0:
                break
            if m not in chosen[c]:
                chosen[c].add(m)
                room[m] -= 1
        while len(chosen[c]) < wanted[c]:
            a = next(m for m in names if room[m] > 0)
            b = next(m for m in names if m not in chosen[c] and room[m] == 0)
            d = next(d for d in sorted(chosen) if b in chosen[d] and a not in chosen[d])
            chosen[d].discard(b)
            chosen[d].add(a)
            room[a] -= 1
            chosen[c].add(b)
    return chosen


def _fill(
    names: list[str],
    held: Mapping[str, list[Work]],
    items: list[Work],
    counts: Mapping[str, int],
    target: dict[str, set[Work]],
) -> None:
    """Each member keeps up to its count of `items` from what it holds; the rest go to the
    members short of theirs, in member order."""
    given = {m: 0 for m in names}
    taken: set[Work] = set()
    for m in names:
        for item in held[m][: counts[m]]:
            target[m].add(item)
            given[m] += 1
            taken.add(item)
    for item, m in zip((i for i in items if i not in taken), _open_places(names, counts, given), strict=True):
        target[m].add(item)


def _open_places(names: list[str], share: Mapping[str, int], given: Mapping[str, int]) -> list[str]:
    """The places still open, one per missing item, dealt round the members in turn, so
    free items spread over the members short of their share."""
    missing = {m: share[m] - given[m] for m in names}
    places: list[str] = []
    while any(missing.values()):
        for m in names:
            if missing[m] > 0:
                places.append(m)
                missing[m] -= 1
    return places
