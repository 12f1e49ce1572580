"""A connector's own client settings (KIP-458): `producer.override.*`, `consumer.override.*`,
`admin.override.*`, checked against the worker's `connector.client.config.override.policy`.

The policies are Kafka Connect's: `None` allows no override, `Principal` only
`security.protocol`, `sasl.mechanism` and `sasl.jaas.config` (a connector's own
credentials), `All` (Kafka's default since 3.0) any. A name the policy does not allow is
refused with Kafka's message. Past the policy, an override must be one this runtime applies
to a client the connector's tasks use; any other is refused, naming it and why, rather than
stored and ignored:

- producer (tasks that write records, through their fence on the worker's cluster): the
  security settings and `client.id` (the connector's tasks then write through a connection of
  their own, `output_connections`), and `compression.type`. `acks` may only be `all` (-1) and
  `enable.idempotence` only `true`: task output is always written so;
- consumer (TopicIngest's reader): the security settings and `connect_rebalance.client_tuning`'s
  consumer settings, passed to the Spark source as `kafka.<setting>` options;
- admin (the client that creates the topics a source task writes to, `topic.creation.*`):
  the security settings and the tuning's admin settings.

An override is merged over the worker's settings for the same client (`producer.*`,
`consumer.*`, and for the admin client the worker's own with `admin.*` over them), one name
at a time, as Kafka Connect merges them.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_rebalance.client_security import ClientSecurity, is_security_setting
from connect_rebalance.client_tuning import ADMIN, COMPRESSION_CODECS, CONSUMER, tuning_problem
from workers.plugins.api import ConfigProblem

CLIENTS = ("producer", "consumer", "admin")
POLICY_PACKAGE = "org.apache.kafka.connect.connector.policy."
POLICY_SUFFIX = "ConnectorClientConfigOverridePolicy"
POLICIES = ("None", "Principal", "All")
PRINCIPAL_SETTINGS = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})
# Values that are what task output does anyway (the first, as Kafka names it).
PRODUCER_MATCHING = {"acks": ("all", "-1"), "enable.idempotence": ("true",)}
PRODUCER_TUNING = ("client.id", "compression.type")
_TUNING = {"consumer": CONSUMER, "admin": ADMIN}
_NOT_APPLIED = {
    "producer": (
        "task records are written one request at a time with the source offset they move the task to, "
        "through the task's fence on the worker's cluster: only the producer's security settings, "
        f"{', '.join(PRODUCER_TUNING)} apply here"
    ),
    "consumer": (
        "the connector's consumer reads its partitions with no group, its offsets kept in the task's "
        f"checkpoint: only its security settings, {', '.join(CONSUMER)} apply here"
    ),
    "admin": (
        "the connector's admin client only creates the topics its tasks write to, on the worker's "
        f"cluster: only its security settings, {', '.join(ADMIN)} apply here"
    ),
}
_OTHER_CLUSTER = {
    "producer": "task records and their source offsets are written to the worker's cluster, where the "
    "task's fence is",
    "consumer": "the cluster a connector reads is its own setting (TopicIngest's bootstrap.servers)",
    "admin": "topics are created on the worker's cluster, where task records are written",
}


def override_prefix(client: str) -> str:
    return f"{client}.override."


def policy_alias(value: str) -> str | None:
    """The policy a `connector.client.config.override.policy` value names (its alias, its
    class's simple or full name, as Kafka's plugin aliases), or None."""
    name = value.strip().removeprefix(POLICY_PACKAGE).removesuffix(POLICY_SUFFIX)
    return name if name in POLICIES else None


def policy_allows(policy: str, name: str) -> bool:
    return policy == "All" or (policy == "Principal" and name in PRINCIPAL_SETTINGS)


def policy_refusal(policy: str, name: str) -> str:
    """Kafka's message for an override the policy does not allow (the client's own name)."""
    return f"The '{policy}' policy does not allow '{name}' to be overridden in the connector configuration."


def overrides(config: Mapping[str, str], client: str) -> dict[str, str]:
    """The connector's overrides of one client, by the client's setting names."""
    prefix = override_prefix(client)
    return {name[len(prefix) :]: value for name, value in config.items() if name.startswith(prefix)}


def client_settings(base: Mapping[str, str], config: Mapping[str, str], client: str) -> dict[str, str]:
    """A client's settings: the worker's for it (`base`), with the connector's overrides over them."""
    return {**base, **overrides(config, client)}


def unused_reason(client: str, kafka_clients: frozenset[str], topic_creation: bool) -> str | None:
    """Why the connector's tasks have no such client, or None when they have."""
    writes = "producer" in kafka_clients
    if client == "admin" and writes and not topic_creation:
        return (
            "the connector's admin client only creates the topics its tasks write to, and this "
            "config asks for no topic creation (topic.creation.*)"
        )
    if client in ("producer", "admin") and not writes:
        return "this connector's tasks write no records to Kafka, so they have no producer or admin client"
    if client == "consumer" and client not in kafka_clients:
        return "this connector's tasks read no topics, so they have no consumer"
    return None


def not_applied_reason(client: str, name: str, value: str) -> str | None:
    """Why an override of a client the tasks use is not applied here, or None if it is."""
    if is_security_setting(name):
        return None
    if name == "bootstrap.servers":
        return _OTHER_CLUSTER[client]
    if client == "producer":
        if name in PRODUCER_MATCHING:
            if value.strip().lower() in PRODUCER_MATCHING[name]:
                return None
            return f"task output is always written with {name}={PRODUCER_MATCHING[name][0]}"
        if name == "compression.type":
            if value.strip() in COMPRESSION_CODECS:
                return None
            return f"String must be one of: {', '.join(COMPRESSION_CODECS)}"
        return None if name in PRODUCER_TUNING else _NOT_APPLIED[client]
    table = _TUNING[client]
    if name not in table:
        return _NOT_APPLIED[client]
    return tuning_problem(table, name, value)


def override_problems(
    config: Mapping[str, str],
    policy: str,
    kafka_clients: frozenset[str],
    topic_creation: bool,
    worker_settings: Mapping[str, Mapping[str, str]],
) -> list[ConfigProblem]:
    """Every override the policy refuses (Kafka's message) or this runtime would not apply.
    `worker_settings`: each client's settings from the worker, which its overrides go over."""
    problems = []
    for client in CLIENTS:
        given = overrides(config, client)
        prefix = override_prefix(client)
        refused = set()
        for name, value in sorted(given.items()):
            if not policy_allows(policy, name):
                problems.append(ConfigProblem(prefix + name, policy_refusal(policy, name)))
            else:
                reason = unused_reason(client, kafka_clients, topic_creation) or not_applied_reason(
                    client, name, value
                )
                if reason is None:
                    continue
                problems.append(ConfigProblem.invalid(prefix + name, value, reason))
            refused.add(name)
        security = sorted(name for name in given if is_security_setting(name))
        if security and not refused.intersection(security):
            try:
                settings = client_settings(worker_settings.get(client, {}), config, client)
                parsed = ClientSecurity.parse(settings, prefix)
                if client == "consumer":  # TopicIngest's Python workers read with librdkafka
                    parsed.librdkafka()
            except ValueError as exc:
                # Which setting is at fault is in the reason; none of their values is shown (Kafka
                # shows a password's as [hidden], and sasl.jaas.config holds one).
                problems.append(
                    ConfigProblem(prefix + security[0], f"Invalid client security settings: {exc}")
                )
    return problems
