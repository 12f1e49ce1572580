"""Memory per member of the group coordinator: the resident size a consumer group's state adds.

    python bench/group_memory.py [--members 1000 5000 10000] [--update-readme]

Each size runs in a fresh process: the pure group coordinator core (the state a coordinator
keeps for its groups; the topics' own logs are not part of it) with a cluster of 10
partitions per member (10,000 members: 100,000 partitions in 1,000 topics). The members
join with ConsumerGroupHeartbeat (one offloaded target computation for all of them), and
every member heartbeats until it holds its target and the group is Stable. The figure is the
resident set size (VmRSS) after, minus before the members joined, per member; "flat" means
it does not grow with the group.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.readme_table import publish  # noqa: E402

PARTITIONS_PER_MEMBER = 10
PARTITIONS_PER_TOPIC = 100
GOAL_BYTES = 20_000  # per member: a member's profile, assignment, target and timers


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class Cluster:
    """A fixed metadata view: `count` topics of PARTITIONS_PER_TOPIC partitions."""

    version = 0

    def __init__(self, count: int) -> None:
        self.ids = {
            f"topic-{i:05d}": str(uuid.uuid5(uuid.NAMESPACE_OID, f"topic-{i:05d}")) for i in range(count)
        }
        self.by_id = {v: k for k, v in self.ids.items()}

    def topic_id(self, name: str) -> str | None:
        return self.ids.get(name)

    def partition_count(self, topic_id: str) -> int | None:
        return PARTITIONS_PER_TOPIC if topic_id in self.by_id else None

    def names(self) -> list[str]:
        return sorted(self.ids)

    def name_of(self, topic_id: str) -> str | None:
        return self.by_id.get(topic_id)


def measure(members: int) -> dict[str, float]:
    """Run in a child process: the RSS the group adds, per member."""
    import gc

    from connect_rebalance.protocol import codec
    from connect_rebalance.protocol.api_keys import ApiKey
    from coordinator.groups.coordinator import GroupCoordinator
    from coordinator.groups.requests import GroupRequest
    from coordinator.groups.settings import GroupSettings

    cluster = Cluster(members * PARTITIONS_PER_MEMBER // PARTITIONS_PER_TOPIC)
    topics = cluster.names()
    settings = GroupSettings(consumer_assignor_offload=True, consumer_assignment_interval_ms=1000)
    core = GroupCoordinator(settings, lambda name: PARTITIONS_PER_TOPIC, topics_view=cluster)
    ids = iter(range(1, 1 << 62))
    effects: list[object] = []

    def heartbeat(member: str, epoch: int, owned: list[dict[str, object]] | None) -> dict[str, object]:
        fields: dict[str, object] = {
            "group_id": "big", "member_id": member, "member_epoch": epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 300000 if epoch == 0 else -1,
            "subscribed_topic_names": topics if epoch == 0 else None, "server_assignor": None,
            "topic_partitions": owned,
        }  # fmt: skip
        body = codec.build_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, fields)
        request_id = next(ids)
        outcome = core.handle(GroupRequest(request_id, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body), 0)
        effects.extend(outcome.effects)
        return outcome.replies[request_id]

    gc.collect()
    before = rss_bytes()
    epochs: dict[str, int] = {}
    owned: dict[str, list[dict[str, object]]] = {}
    for i in range(members):
        answer = heartbeat(f"member-{i:05d}", 0, [])
        epochs[answer["member_id"]] = answer["member_epoch"]  # type: ignore[index]
        owned[answer["member_id"]] = []  # type: ignore[index]
    for key, operation in core.ctx.timers.pop_expired(1000):  # the assignment interval is over
        if "assign" in str(key):
            outcome = core.ctx.begin()
            operation(1000)
            core.ctx.end()
            effects.extend(outcome.effects)
    for effect in effects:
        core.target_computed(effect, effect.run(), 1000)  # type: ignore[attr-defined]
    for _ in range(3):  # revoke, then pick up: a few rounds reach the target
        for member in list(epochs):
            answer = heartbeat(member, epochs[member], owned[member])
            epochs[member] = answer["member_epoch"]  # type: ignore[assignment]
            if answer["assignment"] is not None:
                owned[member] = answer["assignment"]["topic_partitions"]  # type: ignore[index]
    group = core.groups["big"]
    assert group.state.value == "Stable", group.state
    del owned, epochs
    effects.clear()
    gc.collect()
    after = rss_bytes()
    return {"members": members, "partitions": members * PARTITIONS_PER_MEMBER,
            "rss_before_mb": before / 2**20, "rss_after_mb": after / 2**20,
            "bytes_per_member": (after - before) / members}  # fmt: skip


def readme_block(results: dict[str, object]) -> str:
    rows = results["sizes"]  # type: ignore[index]
    lines = [
        "| members | partitions | resident size added | per member | goal per member |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:  # type: ignore[union-attr]
        lines.append(
            f"| {r['members']:,} | {r['partitions']:,} | {r['rss_after_mb'] - r['rss_before_mb']:.0f} MiB "
            f"| {r['bytes_per_member'] / 1024:.1f} KiB | {GOAL_BYTES / 1024:.0f} KiB, flat |"
        )
    lines += ["", f"Pure group coordinator core in a fresh process per size; {results['machine']}."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child)))
        return 0
    sizes = []
    for members in args.members:
        run = subprocess.run(
            [sys.executable, __file__, "--child", str(members)], capture_output=True, text=True
        )
        if run.returncode != 0:
            raise SystemExit(run.stderr)
        result = json.loads(run.stdout.splitlines()[-1])
        sizes.append(result)
        print(f"{members:6} members: +{result['rss_after_mb'] - result['rss_before_mb']:.0f} MiB, "
              f"{result['bytes_per_member'] / 1024:.1f} KiB per member", flush=True)  # fmt: skip
    results = {"sizes": sizes, "machine": f"Python {sys.version.split()[0]}"}
    print(publish("group_memory", results, args.update_readme))
    return 0


if __name__ == "__main__":
    sys.exit(main())
