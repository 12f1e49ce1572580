"""The group coordinator's settings, as plain values the pure core can hold."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupSettings:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_group_size: int = 2147483647
    offsets_retention_ms: int = 604800000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    consumer_session_timeout_ms: int = 45000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_pending_heartbeat_interval_ms: int = 500
    # The bounds a group's own session and heartbeat overrides must lie within (group_configs.py).
    consumer_min_session_timeout_ms: int = 45000
    consumer_max_session_timeout_ms: int = 60000
    consumer_min_heartbeat_interval_ms: int = 5000
    consumer_max_heartbeat_interval_ms: int = 15000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # Server-side targets computed off the event loop (an effect the IO shell runs), and epoch
    # bumps within the interval after the first sharing one computation.
    consumer_assignor_offload: bool = False
    consumer_assignment_interval_ms: int = 0
    # The bounds a group's own assignment interval must lie within (group_configs.py).
    consumer_min_assignment_interval_ms: int = 0
    consumer_max_assignment_interval_ms: int = 10000
    # Heartbeat intervals adapt to how many members the coordinator serves (engine.py).
    adaptive_heartbeat: bool = False
    adaptive_min_heartbeat_interval_ms: int = 250
    adaptive_heartbeat_budget: int = 2000
    consumer_max_size: int = 2147483647
    # Online migration between classic and consumer groups: bidirectional, upgrade, downgrade, disabled.
    consumer_migration_policy: str = "bidirectional"
    connect_session_timeout_ms: int = 10000
    connect_heartbeat_interval_ms: int = 3000
    # The bounds a connect group's own session and heartbeat overrides must lie within.
    connect_min_session_timeout_ms: int = 6000
    connect_max_session_timeout_ms: int = 1800000
    connect_min_heartbeat_interval_ms: int = 1000
    connect_max_heartbeat_interval_ms: int = 15000
    connect_max_size: int = 2147483647
    # Online migration between classic `connect` groups and connect groups: same four policies.
    connect_migration_policy: str = "bidirectional"
    # The rebalances each group's timeline keeps (rebalance_timeline.py).
    rebalance_timeline_size: int = 20
