"""Dynamic group configuration (KIP-848): per-group overrides of the coordinator's settings.

An administrator sets them with IncrementalAlterConfigs and reads them with DescribeConfigs
on GROUP resources. A group's configuration is keyed by the group's name and lives apart
from the group itself, as KIP-848 has it: it can be set before the group exists, and it is
kept when the group is deleted (it applies again when the group is created again).

Each change is one `GroupConfigRecord` (the group's whole explicit configuration, or a
tombstone when none is left), replayed like every other record; the engine reads the table
at every heartbeat, so a new value takes effect at each member's next heartbeat and nothing
else of the group changes (no epoch bump).

Consumer groups have Kafka's `consumer.*` names; connect groups the same two settings under
a `connect.` prefix, bounded by the coordinator's `group.connect.min/max.*` settings. A
connect group's heartbeat answer carries its session timeout as well, so that a worker's
own no-zombie deadline follows the group's override (workers/distributed/membership/session_watch.py).

Validation follows Kafka's `GroupConfig`: a known name, an integer, within the coordinator's
bounds (`group.<type>.min/max.*`), and the session longer than the heartbeat interval
(each group's effective values: its override or the coordinator's default). No IO here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.context import GroupContext
from coordinator.groups.records import GroupConfigRecord
from coordinator.groups.requests import GroupRequest
from coordinator.groups.settings import GroupSettings

CONSUMER_SESSION_TIMEOUT = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
CONSUMER_ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
CONNECT_SESSION_TIMEOUT = "connect.session.timeout.ms"
CONNECT_HEARTBEAT_INTERVAL = "connect.heartbeat.interval.ms"
# IncrementalAlterConfigs' config_operation values, and DescribeConfigs' config_source values.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_GROUP_CONFIG, DEFAULT_CONFIG = 8, 5
RESOURCE_GROUP = 32  # Kafka's ConfigResource.Type.GROUP

Configs = dict[str, str]


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    setting: str  # the coordinator setting that gives the default
    default: Callable[[GroupSettings], int]
    low: tuple[str, Callable[[GroupSettings], int]]  # the lower bound's setting and value
    high: tuple[str, Callable[[GroupSettings], int]]
    doc: str


def _bounded(group_type: str, kind: str, doc: str) -> GroupConfigDef:
    """`<type>.<kind>`, defaulting to `group.<type>.<kind>` and bounded by
    `group.<type>.min/max.<kind>`, the settings Kafka names them after (GroupSettings holds
    them as `<type>_<kind>`, `<type>_min_<kind>`, `<type>_max_<kind>`)."""
    attribute, setting = kind.replace(".", "_"), f"group.{group_type}"

    def read(bound: str) -> Callable[[GroupSettings], int]:
        return lambda settings: int(getattr(settings, f"{group_type}_{bound}{attribute}"))

    return GroupConfigDef(
        f"{group_type}.{kind}",
        f"{setting}.{kind}",
        read(""),
        (f"{setting}.min.{kind}", read("min_")),
        (f"{setting}.max.{kind}", read("max_")),
        doc,
    )


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        _bounded(
            "consumer",
            "session.timeout.ms",
            "how long a consumer group member may go without a heartbeat before it is removed",
        ),
        _bounded(
            "consumer",
            "heartbeat.interval.ms",
            "the heartbeat interval given to consumer group members (the most adaptive heartbeats give)",
        ),
        _bounded(
            "consumer",
            "assignment.interval.ms",
            "how long after an epoch bump the server-side target is computed: the bumps within it "
            "share one computation",
        ),
        _bounded(
            "connect",
            "session.timeout.ms",
            "how long a connect group worker may go without a heartbeat before it is removed "
            "(workers stop their own work before that)",
        ),
        _bounded(
            "connect",
            "heartbeat.interval.ms",
            "the heartbeat interval given to connect group workers (the most adaptive heartbeats give)",
        ),
    )
}
# (session, heartbeat) pairs whose effective values must keep session > heartbeat.
_PAIRS = (
    (CONSUMER_SESSION_TIMEOUT, CONSUMER_HEARTBEAT_INTERVAL),
    (CONNECT_SESSION_TIMEOUT, CONNECT_HEARTBEAT_INTERVAL),
)


def invalid_config(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_CONFIG, message)


def effective(explicit: Configs, settings: GroupSettings) -> dict[str, tuple[int, int]]:
    """Every group config's value and source: the group's override, or the coordinator's default."""
    return {
        name: (int(explicit[name]), DYNAMIC_GROUP_CONFIG)
        if name in explicit
        else (d.default(settings), DEFAULT_CONFIG)
        for name, d in GROUP_CONFIGS.items()
    }


def validated(explicit: Configs, settings: GroupSettings) -> Configs:
    """The explicit configuration, or INVALID_CONFIG naming the setting and its bounds."""
    for name, value in explicit.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise invalid_config(f"Unknown group config name: {name}; known: {', '.join(GROUP_CONFIGS)}")
        try:
            number = int(value)
        except ValueError:
            raise invalid_config(f"{name} must be an integer, not {value!r}") from None
        (low_name, low_of), (high_name, high_of) = definition.low, definition.high
        low, high = low_of(settings), high_of(settings)
        if not low <= number <= high:
            raise invalid_config(f"{name} is {number}, outside [{low_name}, {high_name}] = [{low}, {high}]")
    values = effective(explicit, settings)
    for session, heartbeat in _PAIRS:
        if values[session][0] <= values[heartbeat][0]:
            raise invalid_config(
                f"{session} ({values[session][0]}) must be greater than {heartbeat} ({values[heartbeat][0]})"
            )
    return explicit


Change = tuple[str, int, str | None]  # (name, operation, value)


def altered(explicit: Configs, changes: list[Change], settings: GroupSettings) -> Configs:
    """IncrementalAlterConfigs on a group: SET a value or DELETE it (back to the default), in
    turn; APPEND and SUBTRACT apply to list configs, which groups have none of."""
    names = [name for name, _, _ in changes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise invalid_config(f"configs named more than once: {', '.join(repeated)}")
    result = dict(explicit)
    for name, operation, value in changes:
        if name not in GROUP_CONFIGS:
            raise invalid_config(f"Unknown group config name: {name}; known: {', '.join(GROUP_CONFIGS)}")
        if operation == DELETE:
            result.pop(name, None)
        elif operation == SET:
            if value is None:
                raise invalid_config(f"SET of {name} needs a value")
            result[name] = value.strip()
        elif operation in (APPEND, SUBTRACT):
            raise invalid_config(f"APPEND and SUBTRACT apply to list configs only; {name} is not a list")
        else:
            raise invalid_config(f"unknown config operation {operation} for {name}")
    return validated(result, settings)


def override(ctx: GroupContext, group_id: str, name: str) -> int | None:
    """The group's own value of a config, if it has one (read at every heartbeat)."""
    found = ctx.group_configs.get(group_id)
    if found is None:
        return None
    value = found.get(name)
    return None if value is None else int(value)


# -- the requests the core answers (the IO edge builds them from the wire's GROUP resources) --


@dataclass(frozen=True, slots=True)
class GroupConfigChange:
    group_id: str
    changes: tuple[Change, ...]
    # AlterConfigs (the legacy API) replaces the whole configuration: the changes are SETs,
    # and every config they do not name goes back to its default, as in Kafka.
    replace: bool = False


@dataclass(frozen=True, slots=True)
class AlterGroupConfigs:
    resources: tuple[GroupConfigChange, ...]
    validate_only: bool


@dataclass(frozen=True, slots=True)
class DescribeGroupConfigs:
    group_ids: tuple[str, ...]


class GroupConfigs:
    """The handlers and replay of dynamic group configuration; the table is `ctx.group_configs`."""

    def __init__(self, ctx: GroupContext) -> None:
        self.ctx = ctx

    def replay(self, record: GroupConfigRecord) -> None:
        table, journal = self.ctx.group_configs, self.ctx.journal
        if record.configs is None:
            journal.pop_item(table, record.group_id)
        else:
            journal.set_item(table, record.group_id, dict(record.configs))

    def alter(self, request: GroupRequest, now_ms: int) -> None:
        body: AlterGroupConfigs = request.body
        responses = []
        for resource in body.resources:
            group_id, error, message = resource.group_id, ErrorCode.NONE, None
            try:
                if not group_id:
                    raise KafkaApiError(ErrorCode.INVALID_REQUEST, "a GROUP resource needs a group name")
                current = self.ctx.group_configs.get(group_id, {})
                base = {} if resource.replace else current
                configs = altered(base, list(resource.changes), self.ctx.settings)
                if not body.validate_only and configs != current:
                    self.ctx.emit(GroupConfigRecord(group_id, tuple(sorted(configs.items())) or None))
            except KafkaApiError as exc:
                error, message = exc.code, exc.message
            responses.append({"error_code": error, "error_message": message,
                              "resource_type": RESOURCE_GROUP, "resource_name": group_id})  # fmt: skip
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "responses": responses})

    def describe(self, request: GroupRequest, now_ms: int) -> None:
        body: DescribeGroupConfigs = request.body
        results = [
            {"resource_name": group_id,
             "configs": effective(self.ctx.group_configs.get(group_id, {}), self.ctx.settings)}
            for group_id in body.group_ids
        ]  # fmt: skip
        self.ctx.reply(request.request_id, {"results": results})
