"""Drive a connect group the way a worker does, over any transport.

`ConnectDriver` keeps each simulated worker's epoch and the work it runs, and applies every
assignment it is given at once (stop what is gone, start what is new), as a worker does; the
next heartbeat reports what it runs. The transport is a function `(api_key, fields) -> answer`:
the pure core through GroupHarness (virtual clock), or a ProtocolClient over TCP.

Work is written in the draft's case-study notation: "AC0" is connector A, "AT1" its task 1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.protocol.connect_group import (
    ClientAssignor,
    InstalledMember,
    heartbeat_fields,
    install_fields,
)
from connect_rebalance.work import CONNECTOR, Work, work_of

Call = Callable[[int, dict[str, Any]], dict[str, Any]]
INCREMENTAL = ClientAssignor("incremental", 1, 2, 2, b"")


def work(notation: str) -> frozenset[Work]:
    """ "AC0 AT1 BC0" -> {(A, connector), (A, 1), (B, connector)}."""
    items = set()
    for token in notation.split():
        connector, kind, number = token[:-2], token[-2], int(token[-1])
        items.add((connector, CONNECTOR) if kind == "C" else (connector, number))
    return frozenset(items)


def notation(items: frozenset[Work]) -> str:
    return " ".join(sorted(f"{c}C0" if t == CONNECTOR else f"{c}T{t}" for c, t in items))


class ConnectDriver:
    def __init__(self, call: Call, group_id: str = "connect-cluster") -> None:
        self.call, self.group_id = call, group_id
        self.epoch: dict[str, int] = {}
        self.runs: dict[str, frozenset[Work]] = {}
        self.assignors: dict[str, list[ClientAssignor]] = {}
        self.last: dict[str, dict[str, Any]] = {}

    def _apply(self, worker: str, answer: dict[str, Any]) -> dict[str, Any]:
        self.last[worker] = answer
        if answer["error_code"] == 0:
            self.epoch[worker] = answer["member_epoch"]
            if answer["assignment"] is not None:
                self.runs[worker] = work_of(answer["assignment"]["connectors_and_tasks"])
        return answer

    def join(
        self, worker: str, assignors: list[ClientAssignor] | None = None, **fields: Any
    ) -> dict[str, Any]:
        self.assignors[worker] = assignors or [INCREMENTAL]
        self.runs[worker] = frozenset()
        defaults: dict[str, Any] = {"url": f"http://{worker.lower()}:8083", "rebalance_timeout_ms": 60000}
        answer = self.call(
            ApiKey.CONNECT_GROUP_HEARTBEAT,
            heartbeat_fields(
                self.group_id, worker, 0, assignors=self.assignors[worker], owned=[], **{**defaults, **fields}
            ),
        )
        return self._apply(worker, answer)

    def beat(self, worker: str, epoch: int | None = None, **fields: Any) -> dict[str, Any]:
        """A heartbeat reporting what the worker runs."""
        fields.setdefault("owned", self.runs.get(worker, frozenset()))
        epoch = self.epoch.get(worker, 0) if epoch is None else epoch
        answer = self.call(
            ApiKey.CONNECT_GROUP_HEARTBEAT, heartbeat_fields(self.group_id, worker, epoch, **fields)
        )
        return self._apply(worker, answer)

    def change_reason(self, worker: str, reason: int) -> dict[str, Any]:
        """Ask for a rebalance: the assignor's reason changes (a scheduled rebalance)."""
        self.assignors[worker] = [replace(a, reason=reason) for a in self.assignors[worker]]
        return self.beat(worker, assignors=self.assignors[worker])

    def leave(self, worker: str) -> dict[str, Any]:
        answer = self.call(ApiKey.CONNECT_GROUP_HEARTBEAT, heartbeat_fields(self.group_id, worker, -1))
        self.runs.pop(worker, None)
        return answer

    def prepare(self, worker: str) -> dict[str, Any]:
        return self.call(
            ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
            {"group_id": self.group_id, "member_id": worker, "member_epoch": self.epoch[worker]},
        )

    def install(
        self, worker: str, group_epoch: int, plan: dict[str, str], covered: str | None = None, error: int = 0
    ) -> dict[str, Any]:
        members = [InstalledMember(w, work(n)) for w, n in plan.items()]
        declared = work(covered) if covered is not None else frozenset().union(*(m.work for m in members))
        return self.call(
            ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
            install_fields(self.group_id, worker, self.epoch[worker], group_epoch, declared, members, error),
        )

    def compute(self, worker: str, plan: dict[str, str], covered: str | None = None) -> dict[str, Any]:
        """Prepare, then install `plan` for the prepared epoch; returns the Prepare answer."""
        prepared = self.prepare(worker)
        assert prepared["error_code"] == 0, prepared
        installed = self.install(worker, prepared["group_epoch"], plan, covered)
        assert installed["error_code"] == 0, installed
        return prepared

    def describe(self) -> dict[str, Any]:
        answer = self.call(ApiKey.CONNECT_GROUP_DESCRIBE, {"group_ids": [self.group_id]})
        return answer["groups"][0]

    def state(self) -> dict[str, Any]:
        """Group epoch, target epoch, and per worker (epoch, current, target) in the draft's notation."""
        group = self.describe()
        return {
            "group_epoch": group["group_epoch"],
            "assignment_epoch": group["assignment_epoch"],
            "members": {
                m["member_id"]: (
                    m["member_epoch"],
                    notation(work_of(m["assignment"]) | work_of(m["pending_revocation"])),
                    notation(work_of(m["target_assignment"])),
                )
                for m in group["members"]
            },
        }


class TcpTransport:
    """A synchronous `Call` over the project's ProtocolClient (its own event loop): version 0 of
    each API, or the version `request` names."""

    def __init__(self, bootstrap: str, client_id: str = "connect-driver") -> None:
        self.loop = asyncio.new_event_loop()
        self.client = self.loop.run_until_complete(ProtocolClient.connect(bootstrap, client_id))

    def __call__(self, api_key: int, fields: dict[str, Any]) -> dict[str, Any]:
        return self.request(api_key, 0, fields)

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        return self.loop.run_until_complete(
            asyncio.wait_for(self.client.request(api_key, version, fields), 30)
        )

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()
