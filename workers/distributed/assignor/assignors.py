"""The worker-side assignors, eager and incremental cooperative, and which a worker offers.

Kafka Connect has two: the eager assignor (every rebalance stops everything; the work is
dealt out afresh, round-robin, with no memory) and the incremental cooperative one (sticky
and balanced, a lost worker's work held for `scheduled.rebalance.max.delay.ms`:
balanced_target.py and lost_work.py). Both group protocols use them: on `classic` the leader picks one by the
embedded protocol the coordinator chose; on `connect` each is a client assignor the worker
offers in its heartbeats, and the coordinator names the one every worker supports when it
asks a worker to compute (docs/protocol.md, "Connect groups"):

| client assignor | Kafka Connect's protocol | metadata version | metadata |
|---|---|---|---|
| `sessioned` | incremental cooperative | 1 | JSON: url, worker_id, config_offset |
| `eager` | eager | 1 | the same JSON |

What a worker offers follows `connect.protocol`, as Kafka Connect's JoinGroup does:
`eager` -> eager only; `compatible` and `sessioned` -> incremental first, then eager, so
one eager-only worker turns the group eager and it turns back when that worker leaves.

Pure: the caller reads the config and status topics and passes what they say.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.assignor import lost_work

SESSIONED, EAGER = "sessioned", "eager"
METADATA_VERSION = 1  # the JSON metadata's version (the only one so far)


def offered(connect_protocol: str) -> tuple[str, ...]:
    """The client assignors a worker offers, in priority order."""
    return (EAGER,) if connect_protocol == "eager" else (SESSIONED, EAGER)


def plan(
    assignor: str,
    members: Mapping[str, str],
    current: Mapping[str, frozenset[Work]],
    work: frozenset[Work],
    last_owner: Mapping[Work, str],
    left: set[str],
    held: lost_work.HeldWork,
    now: float,
    delay_s: float,
) -> tuple[dict[str, frozenset[Work]], lost_work.HeldWork]:
    """The next target by `assignor` (arguments as lost_work.plan's) and the work still held.

    Eager ignores what each member has (no stickiness) and holds nothing back: a crashed
    worker's work is dealt out with the rest at once.
    """
    if assignor == EAGER:
        return eager_round_robin(sorted(members), work), lost_work.HeldWork()
    return lost_work.plan(members, current, work, last_owner, left, held, now, delay_s)


def eager_round_robin(members: list[str], work: frozenset[Work]) -> dict[str, frozenset[Work]]:
    """Kafka Connect's EagerAssignor: connectors in name order round-robin, then tasks, one cursor."""
    deal: dict[str, set[Work]] = {m: set() for m in members}
    if not members:
        return {}
    ordered = sorted(i for i in work if i[1] == CONNECTOR) + sorted(i for i in work if i[1] != CONNECTOR)
    for n, item in enumerate(ordered):
        deal[members[n % len(members)]].add(item)
    return {m: frozenset(items) for m, items in deal.items()}
