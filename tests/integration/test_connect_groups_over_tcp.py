"""Connect groups over TCP: the draft's case studies driven by the project's own protocol
client against a coordinator process; kill -9 of the coordinator in the middle of a
reconciliation; bad requests answered with INVALID_REQUEST and a message."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import ClientAssignor, heartbeat_fields
from tests.support import connect_case_studies as case_studies
from tests.support.connect_case_studies import Expire, computing, held_once
from tests.support.connect_driver import ConnectDriver, TcpTransport, notation
from tests.support.group_scenario import wait_until

pytestmark = pytest.mark.integration
SESSION_TIMEOUT_MS = 2000


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data", connect_timings(SESSION_TIMEOUT_MS, 500)).start()
    try:
        yield process
    finally:
        process.kill()


def tcp_driver(coordinator: CoordinatorProcess, transports: list[TcpTransport]) -> ConnectDriver:
    transport = TcpTransport(coordinator.bootstrap)
    transports.append(transport)
    return ConnectDriver(transport)


def expire_in_real_time(d: ConnectDriver) -> Expire:
    """The alive workers heartbeat until `gone`'s session has expired: within the session and the
    coordinator's timer tick, or the test fails saying how long it stayed."""

    def expire(gone: str, alive: list[str]) -> None:
        silent_since = time.monotonic()
        while (
            gone in d.state()["members"] and time.monotonic() - silent_since < 3 * SESSION_TIMEOUT_MS / 1000
        ):
            for w in alive:
                assert d.beat(w)["error_code"] == 0
            time.sleep(0.3)  # the alive workers' heartbeat interval
        stayed = time.monotonic() - silent_since
        assert gone not in d.state()["members"], (
            f"{gone} is still a member {stayed:.1f} s after it went silent"
        )

    return expire


def test_case_studies_empty_group_w1_joins_w2_joins(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    d = tcp_driver(coordinator, transports)
    case_studies.empty_group_then_w1_joins(d)
    case_studies.w2_joins(d)


def test_case_study_a_worker_leaving(coordinator: CoordinatorProcess, transports: list[TcpTransport]) -> None:
    d = tcp_driver(coordinator, transports)
    case_studies.a_worker_leaving(d, expire_in_real_time(d))


def test_case_study_a_worker_bouncing(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    d = tcp_driver(coordinator, transports)
    case_studies.a_worker_bouncing(d, expire_in_real_time(d))


def test_kill_9_in_the_middle_of_a_reconciliation_resumes_at_the_same_epochs(
    tmp_path: Path, transports: list[TcpTransport]
) -> None:
    # Sessions long enough to survive the restart: the workers keep their places.
    coordinator = CoordinatorProcess(tmp_path / "data", {"group.connect.session.timeout.ms": "30000"})
    coordinator.start()
    try:
        d = tcp_driver(coordinator, transports)
        case_studies.empty_group_then_w1_joins(d)
        d.join("W2")
        d.compute(computing(d, "W1", "W2"), {"W1": "AC0 AT1 AT2", "W2": "BC0 BT1"})
        d.beat("W1")  # W1 is told to stop BC0 and BT1, and has not said it did
        before = d.state()
        assert before["members"]["W1"] == (1, case_studies.EVERYTHING, "AC0 AT1 AT2")
        held_once(d)

        coordinator.kill()
        coordinator.start()
        d.call = tcp_driver(coordinator, transports).call
        assert d.state() == before, "the same epochs, targets and pending revocation after the restart"
        held_once(d)
        waiting = d.beat("W2")
        assert waiting["error_code"] == 0 and not d.runs["W2"], "BC0/BT1 are still W1's until it lets go"
        assert d.beat("W1")["member_epoch"] == 2
        assert d.beat("W2")["member_epoch"] == 2 and notation(d.runs["W2"]) == "BC0 BT1"
        held_once(d)
        assert d.describe()["group_state"] == "Stable"
    finally:
        coordinator.kill()


def test_a_chosen_worker_that_never_installs_is_replaced(
    tmp_path: Path, transports: list[TcpTransport]
) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"group.connect.session.timeout.ms": "30000"})
    coordinator.start()
    try:
        d = tcp_driver(coordinator, transports)
        d.join("W1", rebalance_timeout_ms=1000)
        d.join("W2", rebalance_timeout_ms=1000)
        chosen = computing(d, "W1", "W2")
        other = "W2" if chosen == "W1" else "W1"
        assert d.prepare(chosen)["error_code"] == 0  # ... and it never installs

        def other_is_asked() -> bool:
            d.beat(chosen)
            return bool(d.beat(other)["should_compute_assignment"])

        wait_until(other_is_asked, 15, "another worker to be chosen", interval=0.2)
        d.compute(other, {other: "AC0 AT1", chosen: "BC0"})
        assert d.describe()["assignment_epoch"] == d.describe()["group_epoch"]
    finally:
        coordinator.kill()


def test_bad_requests_get_invalid_request_with_a_message_and_the_coordinator_keeps_serving(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    d = tcp_driver(coordinator, transports)
    call = d.call
    no_group = call(ApiKey.CONNECT_GROUP_HEARTBEAT, heartbeat_fields("", "W1", 0, url="http://w1"))
    assert no_group["error_code"] == ErrorCode.INVALID_REQUEST and "GroupId" in no_group["error_message"]
    no_url = call(
        ApiKey.CONNECT_GROUP_HEARTBEAT,
        heartbeat_fields("g", "W1", 0, rebalance_timeout_ms=1000, assignors=[ClientAssignor("a", 0, 1, 1)]),
    )
    assert no_url["error_code"] == ErrorCode.INVALID_REQUEST and "Url" in no_url["error_message"]
    bad_version = call(
        ApiKey.CONNECT_GROUP_HEARTBEAT,
        heartbeat_fields(
            "g", "W1", 0, url="http://w1", rebalance_timeout_ms=1000, assignors=[ClientAssignor("a", 0, 1, 4)]
        ),
    )
    assert bad_version["error_code"] == ErrorCode.INVALID_REQUEST
    assert "MetadataVersion" in bad_version["error_message"]
    prepare = call(
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT, {"group_id": "g", "member_id": "W1", "member_epoch": -5}
    )
    assert prepare["error_code"] == ErrorCode.INVALID_REQUEST and "MemberEpoch" in prepare["error_message"]
    unknown = call(
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
        {"group_id": "nope", "member_id": "W1", "member_epoch": 0, "group_epoch": 1, "error": 0,
         "connectors_and_tasks": {"connectors": [], "tasks": []}, "members": []},
    )  # fmt: skip
    assert unknown["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    described = call(ApiKey.CONNECT_GROUP_DESCRIBE, {"group_ids": ["nope"]})["groups"][0]
    assert described["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    # Still serving: a real join works.
    started = time.monotonic()
    assert d.join("W1")["error_code"] == 0 and time.monotonic() - started < 5
    assert coordinator.is_running()


def test_api_versions_advertises_the_connect_group_apis(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    d = tcp_driver(coordinator, transports)
    versions = d.call.client  # type: ignore[attr-defined]
    transport = d.call
    answer = transport.loop.run_until_complete(  # type: ignore[attr-defined]
        versions.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
    )
    advertised = {a["api_key"]: (a["min_version"], a["max_version"]) for a in answer["api_keys"]}
    for key in (10000, 10001, 10002, 10003):
        assert advertised[key] == (0, 0)
