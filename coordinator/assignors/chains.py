"""Chains of moves that take a heterogeneous uniform assignment to the best balance its
subscriptions allow.

Kafka's uniform assignor stops when no single partition can move to a subscriber of its topic
holding two fewer. That can leave a={x}, b={x,y}, c={y} (6 partitions each) at 3/4/5: c cannot
give to a, and each single move only swaps two sizes. A *chain* can: c gives a y partition to
b, b gives an x partition to a, and every size is 4. This module owns those chains.

Rule (strong balance): no member holding L partitions has a chain to a member holding L - 2 or
fewer, where a chain u -> w1 -> ... -> v is a sequence in which each member gives one partition
it holds to the next, who subscribes to that partition's topic. When no such chain is left the
sizes are the most even the subscriptions allow: the largest is as small, and the smallest as
large, as any assignment can make them. (Each chain lowers the sum of squared sizes; the size
vectors an assignment can reach form an integral base polyhedron, where no such step being left
means the sum is at its minimum, and all minima have the same sizes: Frank and Murota's
discrete decreasing minimization.)

Theory of operation. It runs after the single-move balance, which leaves every *subscription
class* (members with the same topics) within one partition of itself: any member of a class
holding two more than another could give it a partition directly. So the search works on the
small graph of subscription classes and topic classes (topics with the same subscribers), not
on members:
- class s -> topic class t when members of s hold partitions of t; t -> class r when r
  subscribes to t. A chain between members maps to a walk in this graph, and a walk maps back
  to a chain (inside a class any member can hand a partition to any other).
- A pass goes down the levels (a class's level is its largest size). At level h the sources
  are the classes at h not reached from a higher level, the destinations the classes whose
  smallest size is h - 2 or less. A breadth-first search from all sources at once layers the
  classes and topic classes by distance; then, as in Dinic's max-flow, chains are taken depth
  first along edges one layer further only (shortest chains, so the fewest partitions move),
  from each source until it has nothing more to give at this level, with a cursor per node and
  nodes from which no destination is left dropped for the rest of the level. A class reached
  from a higher level is not searched again at a lower one: it was no destination for the
  higher level, so it is none for a lower one, and neither is anything it reaches.
- A found chain moves k partitions at once: k is bounded by the partitions each step's class
  holds of its topic class, and by the number of single units that each still go from a size
  of at least two more to a smaller one (the source class lowered evenly, the destination class
  raised evenly). The destination's members take them lowest first; each member in the middle
  gives one partition and gets one of the previous topic class back, so its size is unchanged;
  the source's members give theirs highest first, then the source class is evened out inside
  itself (with the single-move balance, restricted to the class). Partitions a member got in
  this same assignment are passed on before the ones it held before, to keep what it had.
- Passes repeat until one moves nothing; that pass has searched every level and found no chain.
  Every unit moved lowers the sum of squared sizes, so this ends. In a group where no topic
  class is shared by two subscription classes (Kafka's bucketed benchmark shapes, for one)
  there is no edge between classes and it costs one check.
Cost per pass: O(classes + class edges) for the searches, plus O(partitions of the topic classes
on a chain) array work per chain moved; passes are few (two or three, the last moving nothing,
in random groups of 1,000 to 10,000 members with nearly as many distinct subscriptions).
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from coordinator.assignors.levels import balance, deal
from coordinator.assignors.spec import GroupSpec, IntArray, TopicClass, members_by_class


def move_along_chains(
    spec: GroupSpec,
    subscribes: npt.NDArray[np.bool_],
    topic_classes: list[TopicClass],
    class_partitions: list[IntArray],
    owner: IntArray,
    sizes: IntArray,
) -> int:
    """Move partitions along chains until the assignment is strongly balanced; `owner` and `sizes`
    are updated in place. Returns the number of partition moves."""
    first_topics = np.fromiter((c.topics[0] for c in topic_classes), dtype=np.int64, count=len(topic_classes))
    matrix = subscribes[:, first_topics]  # subscription classes x topic classes
    counts = np.fromiter((p.size for p in class_partitions), dtype=np.int64, count=len(class_partitions))
    # Only topic classes subscribed by two or more subscription classes link classes.
    linking = (matrix.sum(axis=0) > 1) & (counts > 0)
    if not linking.any():
        return 0
    chains = _ClassGraph(spec, matrix, linking, class_partitions, owner, sizes)
    moved = 0
    while moved_now := chains.level_pass(owner, sizes):
        moved += moved_now
    return moved


class _ClassGraph:
    """Subscription classes, the topic classes they subscribe to, and how many partitions of each
    linking topic class (subscribed by two classes or more) each subscription class holds."""

    def __init__(
        self,
        spec: GroupSpec,
        matrix: npt.NDArray[np.bool_],
        linking: npt.NDArray[np.bool_],
        partitions: list[IntArray],
        owner: IntArray,
        sizes: IntArray,
    ) -> None:
        self.spec = spec
        self.partitions = partitions
        self.width = len(partitions)
        self.subscribers = _rows(matrix.T)  # topic class -> subscription classes
        self.topics_of = _rows(matrix)  # subscription class -> its topic classes
        self.links_of = _rows(matrix & linking)  # ... those it shares with another class
        self.members = members_by_class(spec)
        self.count: list[int] = [max(1, m.size) for m in self.members]
        totals = np.bincount(spec.member_class, weights=sizes, minlength=len(self.count))
        self.total: list[int] = totals.astype(np.int64).tolist()
        shared = np.flatnonzero(linking)
        every = np.concatenate([partitions[t] for t in shared])
        topic_of = np.repeat(shared, [partitions[t].size for t in shared])
        keys, held = np.unique(spec.member_class[owner[every]] * self.width + topic_of, return_counts=True)
        # (class * topic classes + topic class) -> partitions of it the class holds; absent: none
        self.held: dict[int, int] = dict(zip(keys.tolist(), held.tolist(), strict=True))

    def hi(self, s: int) -> int:
        """Class s's largest member size (its members are within one of each other)."""
        return -(-self.total[s] // self.count[s])

    def lo(self, s: int) -> int:
        """Class s's smallest member size."""
        return self.total[s] // self.count[s]

    def level_pass(self, owner: IntArray, sizes: IntArray) -> int:
        """One pass over the levels, highest first; returns the partitions moved (0: balanced).

        At level h the sources are the classes not reached yet whose largest size is h, and the
        destinations the classes whose smallest is h - 2 or less. A breadth-first search from all
        sources at once layers the classes by distance; chains are then taken only along edges
        that go one layer further (shortest chains), depth first from each source until it has
        nothing more to give at this level, skipping classes from which no destination is left."""
        total, count = np.asarray(self.total), np.asarray(self.count)
        highest = -(-total // count)
        sources = np.flatnonzero(highest >= 2)
        sources = sources[np.argsort(-highest[sources], kind="stable")].tolist()
        levels = highest.tolist()  # as the pass starts: sources only go down, below their level
        seen_class = [False] * len(self.count)
        seen_topic = [False] * self.width
        moved = 0
        for level, at_level in itertools.groupby(sources, key=levels.__getitem__):
            roots = [s for s in at_level if not seen_class[s]]
            layer = self._layers(roots, level, seen_class, seen_topic)
            if layer is None:
                continue
            dead: set[int] = set()
            cursor: dict[int, int] = {}
            forward: dict[int, list[int]] = {}
            for root in roots:
                while self.hi(root) == level and (
                    chain := self._chain(root, level, layer, forward, dead, cursor)
                ):
                    moved += self.move(chain, owner, sizes)
        return moved

    def _layers(
        self, roots: list[int], level: int, seen_class: list[bool], seen_topic: list[bool]
    ) -> dict[int, int] | None:
        """Breadth-first distances from `roots` over classes and topic classes not seen at a
        higher level (classes as `s`, topic classes as `~t`); None when no destination is met."""
        width, held = self.width, self.held
        layer: dict[int, int] = {}
        for s in roots:
            seen_class[s] = True
            layer[s] = 0
        queue, reached = list(roots), False
        for s in queue:
            for t in self.links_of[s]:
                if seen_topic[t] or s * width + t not in held:
                    continue
                seen_topic[t] = True
                layer[~t] = layer[s] + 1
                for r in self.subscribers[t]:
                    if not seen_class[r]:
                        seen_class[r] = True
                        layer[r] = layer[s] + 2
                        queue.append(r)
                        reached = reached or self.lo(r) <= level - 2
        return layer if reached else None

    def _chain(
        self,
        root: int,
        level: int,
        layer: dict[int, int],
        forward: dict[int, list[int]],
        dead: set[int],
        cursor: dict[int, int],
    ) -> list[int] | None:
        """A shortest chain `[root, t1, s1, ..., tr, sr]` to a destination along the layers, or
        None. Nodes are classes `s` and topic classes `~t`; those from which no destination is
        left join `dead`, and `cursor` keeps each node's place in its edges (an edge passed over
        cannot come back within a level: a class only gains partitions of earlier layers)."""
        width, held = self.width, self.held
        path = [root]
        while path:
            node = path[-1]
            if node >= 0 and len(path) > 1 and self.lo(node) <= level - 2:
                return [n if n >= 0 else ~n for n in path]
            edges = self._forward(node, layer, forward)
            i = cursor.get(node, 0)
            while i < len(edges) and (
                edges[i] in dead or (node >= 0 and node * width + ~edges[i] not in held)
            ):
                i += 1
            cursor[node] = i
            if i < len(edges):
                path.append(edges[i])
            else:
                dead.add(node)
                path.pop()
        return None

    def _forward(self, node: int, layer: dict[int, int], forward: dict[int, list[int]]) -> list[int]:
        """A node's neighbours one layer further (topic classes of a class, classes of a topic
        class); built once a level."""
        edges = forward.get(node)
        if edges is None:
            further = layer[node] + 1
            if node >= 0:
                edges = [~t for t in self.links_of[node] if layer.get(~t) == further]
            else:
                edges = [r for r in self.subscribers[~node] if layer.get(r) == further]
            forward[node] = edges
        return edges

    def units(self, chain: list[int]) -> int:
        """How many partitions to move along `chain` at once (0: none any more): each must still
        go from a size at least two above the one it goes to, and each step's class must hold
        that many."""
        source, sink = chain[0], chain[-1]
        capacity = min(
            self.held.get(chain[i - 1] * self.width + chain[i], 0) for i in range(1, len(chain), 2)
        )
        a, na = int(self.count[source]), int(self.total[source])
        c, nc = int(self.count[sink]), int(self.total[sink])

        def improves(j: int) -> bool:  # the (j + 1)-th unit, after j have moved
            return -(-(na - j) // a) >= (nc + j) // c + 2

        low, high = 0, capacity  # the largest k <= capacity whose k-th unit still improves
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if improves(mid - 1) else (low, mid - 1)
        return low

    def move(self, chain: list[int], owner: IntArray, sizes: IntArray) -> int:
        """Move `units(chain)` partitions along `chain`; returns the partitions moved."""
        k = self.units(chain)
        if not k:
            return 0
        source, sink = chain[0], chain[-1]
        member_class, before = self.spec.member_class, self.spec.owner
        taken: list[IntArray] = []
        for i in range(1, len(chain), 2):
            giver, t = chain[i - 1], chain[i]
            partitions = self.partitions[t]
            candidates = partitions[member_class[owner[partitions]] == giver]
            taken.append(
                _highest_first(candidates, owner, sizes, before, k)
                if i == 1
                else _newest_first(candidates, owner, before, k)
            )
        givers = owner[taken[0]]
        np.subtract.at(sizes, givers, 1)
        for step, next_step in zip(taken, taken[1:], strict=False):
            owner[step] = owner[next_step]  # each member in the middle gets one for the one it gives
        deal(self.members[sink], taken[-1], owner, sizes)
        for i in range(1, len(chain), 2):
            giving, getting = chain[i - 1] * self.width + chain[i], chain[i + 1] * self.width + chain[i]
            self.held[giving] -= k
            if not self.held[giving]:
                del self.held[giving]
            self.held[getting] = self.held.get(getting, 0) + k
        self.total[source] -= k
        self.total[sink] += k
        members = self.members[source]
        if int(sizes[members].max()) - int(sizes[members].min()) > 1:  # even the source class out
            mine = np.concatenate([self.partitions[t] for t in self.topics_of[source]])
            mine = mine[member_class[owner[mine]] == source]
            return k * (len(chain) // 2) + balance(members, mine, owner, sizes)
        return k * (len(chain) // 2)


def _newest_first(candidates: IntArray, owner: IntArray, before: IntArray, k: int) -> IntArray:
    """k of `candidates`, those their holder did not hold before this assignment first."""
    kept = owner[candidates] == before[candidates]
    return candidates[np.argsort(kept, kind="stable")[:k]]


def _highest_first(
    candidates: IntArray, owner: IntArray, sizes: IntArray, before: IntArray, k: int
) -> IntArray:
    """k of `candidates`, lowering their holders' sizes evenly from the top (the reverse of
    dealing), each holder's newest partitions first."""
    holders = owner[candidates]
    kept = owner[candidates] == before[candidates]
    order = np.lexsort((kept, holders))  # by holder, then its newest partitions first
    holders = holders[order]
    starts = np.flatnonzero(np.concatenate(([True], holders[1:] != holders[:-1])))
    rank = np.arange(holders.size) - np.repeat(starts, np.diff(np.append(starts, holders.size)))
    level = sizes[holders] - rank  # the holder's size just before giving this one
    return candidates[order[np.lexsort((holders, -level))[:k]]]


def _rows(matrix: npt.NDArray[np.bool_]) -> list[list[int]]:
    """The column indexes of each row's True entries."""
    rows, columns = np.nonzero(matrix)
    bounds = np.searchsorted(rows, np.arange(matrix.shape[0] + 1)).tolist()
    found = columns.tolist()
    return [found[bounds[r] : bounds[r + 1]] for r in range(matrix.shape[0])]
