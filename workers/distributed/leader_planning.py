"""The computing worker's job: the group's next target, for both group protocols.

On `connect` the coordinator asks one worker to compute (ConnectGroupPrepareAssignment):
`compute` reads the config and status topics to their end, plans with the assignor the
coordinator selected (workers/distributed/assignor/assignors.py) and answers with each member's target and the
metadata every worker gets with it (`LeaderInfo`). On `classic` the elected leader plans the
same way from the members' urls (`plan_classic`). Between targets it remembers who ran what
and the work it holds for lost workers (lost_work.ComputingMemory); when held work's delay
ends, `on_due` is called (on `connect`: a new assignor reason, which starts a new epoch).
On `connect` it also stages each target (warm_handoff.py): a Spark task moving between two
workers stays where it runs until its new owner has prepared it; the metadata names what
each worker is to prepare, and a warm-up that outlasts the rebalance timeout gives up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from connect_rebalance.connect_protocol import NO_ERROR, ConnectAssignment, encode_assignment
from connect_rebalance.protocol.connect_group import InstalledMember
from connect_rebalance.work import Work, work_of
from workers.config.worker import WorkerConfig, url_host_port
from workers.distributed import warm_handoff
from workers.distributed.assignor import assignors, lost_work
from workers.distributed.membership.connect import InstallPlan
from workers.distributed.membership.leader_info import LeaderInfo, work_items
from workers.plugins.registry import Plugins
from workers.storage.config_state import STARTED
from workers.storage.config_store import ConfigStore
from workers.storage.status_store import StatusStore

log = logging.getLogger(__name__)


class TargetPlanner:
    def __init__(
        self,
        config: WorkerConfig,
        configs: ConfigStore,
        statuses: StatusStore,
        on_due: Callable[[], None],
        plugins: Plugins,
    ) -> None:
        self.config, self.configs, self.statuses, self.on_due = config, configs, statuses, on_due
        self.plugins = plugins
        self._memory = lost_work.ComputingMemory()
        self._timer: asyncio.TimerHandle | None = None

    async def compute(self, prepared: dict[str, Any]) -> InstallPlan:
        """The connect group's target, by the assignor the coordinator selected: incremental
        (sticky and balanced, a lost worker's work held for the scheduled delay) or eager."""
        await asyncio.gather(self.configs.read_to_end(), self.statuses.read_to_end())
        state = self.configs.state
        by_url = self.statuses.worker_ids_by_url()
        members = {m["member_id"]: _worker_id_of(m, by_url) for m in prepared["members"]}
        current = {m["member_id"]: work_of(m["target_connectors_and_tasks"]) for m in prepared["members"]}
        # A worker restarted before its old member's session expired is in the group twice:
        # the member its latest presence record names is the live one, and takes over the
        # old one's work (which the coordinator hands over once the old session expires).
        incarnation = self.statuses.incarnations()
        stale = {m for m, worker in members.items() if incarnation.get(worker, m) != m}
        live = {m: worker for m, worker in members.items() if m not in stale}
        assignor = prepared["assignor_name"]
        # What each worker that prepares moved work reports warmed (classic workers never do),
        # and which workers are leaving once their work is prepared elsewhere.
        said = {m["member_id"]: assignor_metadata(m) for m in prepared["members"] if m["member_id"] in live}
        warmed = {m: work_items(meta["warmed"]) for m, meta in said.items() if meta.get("warms")}
        leaving = {m: live[m] for m, meta in said.items() if meta.get("leaving")}
        target, delay_ms, warm = await self.plan(
            live, {m: current[m] for m in live}, state.work(), prepared["assignment_epoch"],
            prepared["group_epoch"], assignor, warmed, leaving,
        )  # fmt: skip
        target.update(dict.fromkeys(stale, frozenset()))
        self._schedule(delay_ms / 1000 if delay_ms else None)
        shared = LeaderInfo(self.config.member_id, self.config.rest_url, state.offset, delay_ms, assignor)
        classic = {
            m["member_id"]: m["assignor"]["metadata_version"] for m in prepared["members"] if _is_classic(m)
        }
        declared = frozenset().union(*target.values()) if target else frozenset()
        return InstallPlan(declared, [
            InstalledMember(m, items, assignors.METADATA_VERSION,
                            replace(shared, warm=sorted(warm.get(m, ()))).encode()) if m not in classic
            else InstalledMember(m, items, classic[m], _classic_header(classic[m], shared))
            for m, items in target.items()
        ])  # fmt: skip

    async def plan(
        self,
        members: Mapping[str, str],
        current: Mapping[str, frozenset[Work]],
        work: frozenset[Work],
        previous_epoch: int,
        epoch: int,
        assignor: str = assignors.SESSIONED,
        warmed: Mapping[str, frozenset[Work]] | None = None,
        leaving: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, frozenset[Work]], int, dict[str, frozenset[Work]]]:
        """Each member's target for `epoch` by `assignor` (members map member id -> worker id);
        while a lost worker's work is held or a warm-up is under way, the milliseconds until the
        next target is due (else 0); and what each member is to prepare. `warmed`: what the
        members that prepare moved work (warm_handoff.py) report prepared; None: none does.
        `leaving`: members (-> worker id) leaving for good once their work runs elsewhere: they
        get nothing, and their work is dealt out at once, as a departed worker's."""
        await self.statuses.read_to_end()  # who left on purpose, who ran what
        memory = self._memory
        memory.recall(previous_epoch, epoch)
        now = time.monotonic()
        delay_s = self.config.scheduled_rebalance_max_delay_ms / 1000
        leaving = leaving or {}
        staying = {m: worker for m, worker in members.items() if m not in leaving}
        target, memory.held = assignors.plan(
            assignor, staying, {m: current[m] for m in staying if m in current}, work,
            {**self.statuses.owners(), **memory.last_owner},
            self.statuses.left_workers() | set(leaving.values()), memory.held, now, delay_s,
        )  # fmt: skip
        target.update(dict.fromkeys(leaving, frozenset()))
        warm: dict[str, frozenset[Work]] = {}
        deadlines = [memory.held.next_deadline()]
        if warmed is not None and assignor != assignors.EAGER:
            timeout_s = self.config.rebalance_timeout_ms / 1000
            staged = warm_handoff.stage(
                target, current, self._preparable, warmed, memory.warming, now, timeout_s
            )
            target, warm, memory.warming = staged.target, staged.warm, staged.warming
            deadlines.append(staged.deadline(timeout_s))
        for member, items in target.items():
            memory.last_owner.update(dict.fromkeys(items, members[member]))
        deadline = min((d for d in deadlines if d is not None), default=None)
        return target, 0 if deadline is None else max(1, int((deadline - now) * 1000)), warm

    def _preparable(self, item: Work) -> bool:
        """A task whose start can be prepared while another worker runs it (its plugin says
        so: a Spark task whose source waits for a grant), of a running connector."""
        connector, task = item
        state = self.configs.state
        config = state.connectors.get(connector)
        plugin = self.plugins.named_by(config)
        return (
            task >= 0 and plugin is not None and bool(getattr(plugin.task_class, "preparable", False))
            and state.target_state(connector) == STARTED
        )  # fmt: skip

    async def plan_classic(
        self,
        urls: Mapping[str, str],
        owned: Mapping[str, frozenset[Work]],
        work: frozenset[Work],
        generation: int,
    ) -> tuple[dict[str, frozenset[Work]], int]:
        """`plan` for a classic group's leader, whose members (member id -> REST url) are known
        by url only: the presence records say which worker id each url belongs to."""
        await self.statuses.read_to_end()
        members = {m: self.statuses.worker_id_of_url(url) for m, url in urls.items()}
        target, delay_ms, _ = await self.plan(members, owned, work, generation - 1, generation)
        return target, delay_ms

    def close(self) -> None:
        self._schedule(None)

    def _schedule(self, after_s: float | None) -> None:
        """When held work's delay ends, `on_due` (a new assignor reason starts a new epoch)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if after_s is not None:
            self._timer = asyncio.get_running_loop().call_later(max(after_s, 0) + 0.05, self._due)

    def _due(self) -> None:
        self._timer = None
        self.on_due()


def assignor_metadata(member: Mapping[str, Any]) -> dict[str, Any]:
    """What a prepared member's assignor metadata says (this project's JSON), or nothing (a
    classic worker's WorkerState bytes)."""
    try:
        said = json.loads((member.get("assignor") or {}).get("metadata") or b"{}")
        return said if isinstance(said, dict) else {}
    except ValueError:
        return {}


def _is_classic(member: Mapping[str, Any]) -> bool:
    """A prepared member speaking the classic protocol (online migration): its assignor metadata
    is Kafka Connect's WorkerState bytes, not this project's JSON."""
    return not bytes((member.get("assignor") or {}).get("metadata") or b"{}").startswith(b"{")


def _classic_header(version: int, info: LeaderInfo) -> bytes:
    """What the computing worker installs for a classic worker in the group (online migration):
    an embedded assignment whose header says what a classic leader would; the coordinator
    fills in its assigned and revoked deltas."""
    return encode_assignment(
        ConnectAssignment(
            version, NO_ERROR, info.leader, info.leader_url, info.config_offset, delay_ms=info.delay_ms
        )
    )


def _worker_id_of(member: Mapping[str, Any], by_url: Mapping[str, str]) -> str:
    """A member's worker id, from its assignor metadata, or its url through the presence records."""
    worker = assignor_metadata(member).get("worker_id")
    if worker is not None:
        return str(worker)
    url = str(member.get("url", ""))  # a classic worker's WorkerState bytes are not JSON
    return by_url.get(url, url_host_port(url))
