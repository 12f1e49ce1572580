"""The connect group protocol draft's case studies, step by step, for any transport.

Each function follows one section of the draft's "Case Studies" and asserts the group,
target and member states the draft lists (epochs and connectors/tasks in its notation). The
pure-core tests run them on a virtual clock; the integration tests run them over TCP against
a coordinator process. `expire(gone, alive)` lets time pass, the `alive` workers heartbeating,
until worker `gone`'s session has expired.
"""

from __future__ import annotations

from collections.abc import Callable

from connect_rebalance.errors import ErrorCode
from connect_rebalance.work import work_of

from .connect_driver import ConnectDriver, notation

EVERYTHING = "AC0 AT1 AT2 BC0 BT1"  # the draft's config topic: connectors A and B and their tasks
Expire = Callable[[str, list[str]], None]


def computing(d: ConnectDriver, *workers: str) -> str:
    """Heartbeat the workers; the one told to compute the next target."""
    told = [w for w in workers if d.beat(w)["should_compute_assignment"]]
    assert len(told) == 1, f"exactly one worker computes, got {told}"
    return told[0]


def empty_group_then_w1_joins(d: ConnectDriver) -> None:
    """'Empty Group' and 'W1 joins the Group'."""
    assert d.describe()["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND, "empty: no group yet"
    joined = d.join("W1")
    assert (joined["member_epoch"], joined["should_compute_assignment"]) == (0, True)
    # "The coordinator bumps the group epoch to 1, adds W1 ... creates an empty member assignment."
    assert d.state() == {"group_epoch": 1, "assignment_epoch": 0, "members": {"W1": (0, "", "")}}
    # "W1 is selected as the member to run the client assignor ... installed as target assignment"
    prepared = d.compute("W1", {"W1": EVERYTHING})
    assert (prepared["group_epoch"], prepared["assignor_name"]) == (1, "incremental")
    assert d.state() == {"group_epoch": 1, "assignment_epoch": 1, "members": {"W1": (0, "", EVERYTHING)}}
    # "When W1 heartbeats ... replies with the new epoch 1 and all the assignments."
    beat = d.beat("W1")
    assert beat["member_epoch"] == 1 and notation(d.runs["W1"]) == EVERYTHING
    assert d.state()["members"] == {"W1": (1, EVERYTHING, EVERYTHING)}


def w2_joins(d: ConnectDriver) -> None:
    """'W2 joins the Group': W1 revokes BC0 and BT1 before W2 gets them. W2 heartbeats in the
    window, before W1 is told to revoke and again before W1 acknowledges, and is given nothing."""
    joined = d.join("W2")
    assert not joined["should_compute_assignment"], "W1 computed last time: it is chosen again"
    assert d.state() == {
        "group_epoch": 2,
        "assignment_epoch": 1,
        "members": {"W1": (1, EVERYTHING, EVERYTHING), "W2": (1, "", "")},
    }, "W2 is transitioned to the current target epoch 1, with nothing"
    assert computing(d, "W1", "W2") == "W1"
    d.compute("W1", {"W1": "AC0 AT1 AT2", "W2": "BC0 BT1"})
    # Target epoch 2; "W2 can be transitioned to epoch1 but it can't have BC0, BT1 until W1 revokes them."
    assert d.state() == {
        "group_epoch": 2,
        "assignment_epoch": 2,
        "members": {"W1": (1, EVERYTHING, "AC0 AT1 AT2"), "W2": (1, "", "BC0 BT1")},
    }
    early = d.beat("W2")  # W1 has not even been told to revoke yet
    assert early["error_code"] == 0 and not d.runs["W2"], (
        f"W2 was given {notation(d.runs['W2'])} while W1 still holds BC0 and BT1"
    )
    held_once(d)
    revoke = d.beat("W1")
    assert revoke["member_epoch"] == 1 and notation(d.runs["W1"]) == "AC0 AT1 AT2", "told to revoke first"
    assert d.state()["members"]["W1"] == (1, EVERYTHING, "AC0 AT1 AT2"), "held until acknowledged"
    waiting = d.beat("W2")  # W1 stopped BC0 and BT1 but has not said so
    assert waiting["error_code"] == 0 and not d.runs["W2"], (
        f"W2 was given {notation(d.runs['W2'])} before W1 acknowledged their revocation"
    )
    held_once(d)
    # "When it acknowledges the revocation, [the] coordinator would transition it to epoch 2."
    assert d.beat("W1")["member_epoch"] == 2
    assert d.state()["members"] == {"W1": (2, "AC0 AT1 AT2", "AC0 AT1 AT2"), "W2": (2, "", "BC0 BT1")}
    # "When W2 heartbeats, it would get it's assignments and be bumped to epoch 2."
    given = d.beat("W2")
    assert given["member_epoch"] == 2 and notation(d.runs["W2"]) == "BC0 BT1"
    assert d.state()["members"] == {"W1": (2, "AC0 AT1 AT2", "AC0 AT1 AT2"), "W2": (2, "BC0 BT1", "BC0 BT1")}
    assert d.describe()["group_state"] == "Stable"


def three_workers(d: ConnectDriver) -> int:
    """The 'Worker Leaving' starting point (the draft's epoch 35 is our epoch 3); returns it."""
    empty_group_then_w1_joins(d)
    w2_joins(d)
    d.join("W3")
    d.compute(computing(d, "W1", "W2", "W3"), {"W1": "AC0 AT1", "W2": "BC0 BT1", "W3": "AT2"})
    for _ in range(2):
        for w in ("W1", "W2", "W3"):
            d.beat(w)
    epoch = d.describe()["group_epoch"]
    assert d.state() == {
        "group_epoch": epoch,
        "assignment_epoch": epoch,
        "members": {
            "W1": (epoch, "AC0 AT1", "AC0 AT1"),
            "W2": (epoch, "BC0 BT1", "BC0 BT1"),
            "W3": (epoch, "AT2", "AT2"),
        },
    }
    return epoch


def _w2_is_lost(d: ConnectDriver, expire: Expire, epoch: int) -> str:
    """W2 stops heartbeating and is kicked out; the assignor keeps everyone's work in place."""
    d.runs.pop("W2")
    expire("W2", ["W1", "W3"])
    state = d.state()
    assert state["group_epoch"] == epoch + 1 and set(state["members"]) == {"W1", "W3"}
    chosen = computing(d, "W1", "W3")
    # "this time it won't change any assignments to give the failing worker a chance to come back"
    d.compute(chosen, {"W1": "AC0 AT1", "W3": "AT2"}, covered="AC0 AT1 AT2")
    for w in ("W1", "W3"):
        d.beat(w)
    assert d.state()["members"] == {
        "W1": (epoch + 1, "AC0 AT1", "AC0 AT1"),
        "W3": (epoch + 1, "AT2", "AT2"),
    }, "they transition to the new epoch with the same work; BC0 and BT1 wait for the delay"
    return chosen


def a_worker_leaving(d: ConnectDriver, expire: Expire) -> None:
    """'Worker Leaving the Group': held, then reassigned after the delay via a reason change."""
    epoch = three_workers(d)
    chosen = _w2_is_lost(d, expire, epoch)
    # "The chosen member would trigger another rebalance after delay δ ... by updating the reason"
    d.change_reason(chosen, 1)
    assert d.describe()["group_epoch"] == epoch + 2
    d.compute(computing(d, "W1", "W3"), {"W1": "AC0 AT1 BC0", "W3": "BT1 AT2"})
    for w in ("W1", "W3"):
        d.beat(w)
    assert d.state()["members"] == {
        "W1": (epoch + 2, "AC0 AT1 BC0", "AC0 AT1 BC0"),
        "W3": (epoch + 2, "AT2 BT1", "AT2 BT1"),
    }


def a_worker_bouncing(d: ConnectDriver, expire: Expire) -> None:
    """'Worker Bounces': W2 comes back within the delay and gets its connectors and tasks back."""
    epoch = three_workers(d)
    _w2_is_lost(d, expire, epoch)
    stale = d.beat("W2", epoch=epoch)
    assert stale["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID, "W2 was removed: it rejoins with epoch 0"
    d.join("W2")
    assert d.describe()["group_epoch"] == epoch + 2
    d.compute(computing(d, "W1", "W3"), {"W1": "AC0 AT1", "W2": "BC0 BT1", "W3": "AT2"})
    for w in ("W1", "W2", "W3"):
        d.beat(w)
    assert d.state() == {
        "group_epoch": epoch + 2,
        "assignment_epoch": epoch + 2,
        "members": {
            "W1": (epoch + 2, "AC0 AT1", "AC0 AT1"),
            "W2": (epoch + 2, "BC0 BT1", "BC0 BT1"),
            "W3": (epoch + 2, "AT2", "AT2"),
        },
    }


def held_once(d: ConnectDriver) -> None:
    """No connector or task is held (assigned or pending revocation) by two workers."""
    held: dict[object, str] = {}
    for m in d.describe().get("members", []):
        for item in work_of(m["assignment"]) | work_of(m["pending_revocation"]):
            assert item not in held, f"{item} held by {held[item]} and {m['member_id']}"
            held[item] = m["member_id"]
