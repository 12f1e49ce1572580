"""Moving partitions between members by size: dealing new ones to the least loaded, and
single moves from the most to the least loaded. The uniform assignor's heterogeneous case and
its chains (`chains.py`) both work with these two steps.

- `deal`: water filling. The least loaded members are raised level by level; among members at
  the same level, Kafka's order (the member's size before the partition, then its rank).
- `balance`: one partition at a time from the most loaded member holding one of the given
  partitions to the least loaded of the given members, until no holder has two more than any
  of them. A partition a member received in the same call is passed on before its own.

Pure array and heap work on `owner` (partition -> member) and `sizes` (member -> partitions
held), both updated in place.
"""

from __future__ import annotations

import heapq

import numpy as np

from coordinator.assignors.spec import IntArray


def deal(members: IntArray, partitions: IntArray, owner: IntArray, sizes: IntArray) -> None:
    """Give `partitions` to the least loaded of `members`, lowest level first (water filling)."""
    level = sizes[members]
    count = partitions.size
    # Sorted by (level, member index): Kafka's order among members of equal level.
    rank = np.argsort(level, kind="stable")
    ordered = level[rank]
    below = np.concatenate(([0], np.cumsum(ordered)))
    # Raising the first i members (sorted) to the level of member i costs i * level - their sum.
    cost = ordered * np.arange(ordered.size) - below[:-1]
    raised = int(np.searchsorted(cost, count, side="right"))
    fill = (count + int(below[raised])) // raised
    adds = np.zeros(members.size, dtype=np.int64)
    adds[rank[:raised]] = fill - ordered[:raised]
    # What is left (fewer than `raised`) goes one each to the first members at the fill level.
    adds[rank[: count - int(adds.sum())]] += 1
    who = np.repeat(np.arange(members.size), adds)
    step = np.arange(count) - np.repeat(np.cumsum(adds) - adds, adds)
    position = np.empty(members.size, dtype=np.int64)
    position[rank] = np.arange(members.size)
    # Kafka hands out partitions level by level: by the member's size before it, then its rank.
    order = np.argsort((level[who] + step) * members.size + position[who], kind="stable")
    owner[partitions] = members[who[order]]
    sizes[members] += adds


def balance(members: IntArray, partitions: IntArray, owner: IntArray, sizes: IntArray) -> int:
    """Move partitions of one topic class from its most to its least loaded subscribers, one at a
    time, until no holder has two more than any subscriber. Returns the number moved."""
    level = sizes[members]
    holder = np.searchsorted(members, owner[partitions])  # position of each owner in `members`
    holds = np.bincount(holder, minlength=members.size)
    if int(level[holds > 0].max()) - int(level.min()) <= 1:
        return 0
    by_holder = np.argsort(holder, kind="stable")
    ends = np.cumsum(holds)  # partitions of holder h: partitions[by_holder[ends[h] - holds[h]:ends[h]]]
    given: dict[int, list[int]] = {}  # partitions a member received here (it may give them on)
    levels, held = level.tolist(), holds.tolist()
    receivers = [(lv, m) for m, lv in enumerate(levels)]
    donors = [(-lv, -m) for m, lv in enumerate(levels) if held[m] > 0]
    heapq.heapify(receivers)
    heapq.heapify(donors)
    moved = 0
    while donors and receivers:
        top, d = -donors[0][0], -donors[0][1]
        if top != levels[d] or held[d] == 0:  # stale entry
            heapq.heappop(donors)
            continue
        low, r = receivers[0]
        if low != levels[r]:
            heapq.heappop(receivers)
            continue
        if top - low <= 1:
            break
        if given.get(d):
            partition = given[d].pop()
        else:
            taken = held[d] - len(given.get(d, ()))  # still-original partitions of d
            partition = int(partitions[by_holder[ends[d] - holds[d] + taken - 1]])
        owner[partition] = members[r]
        given.setdefault(r, []).append(partition)
        levels[d] -= 1
        levels[r] += 1
        held[d] -= 1
        held[r] += 1
        heapq.heapreplace(donors, (-levels[d], -d)) if held[d] else heapq.heappop(donors)
        heapq.heapreplace(receivers, (levels[r], r))
        heapq.heappush(receivers, (levels[d], d))
        heapq.heappush(donors, (-levels[r], -r))
        moved += 1
    sizes[members] = levels
    return moved
