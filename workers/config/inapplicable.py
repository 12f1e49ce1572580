"""Kafka Connect worker settings that have no work to do here, each with the reason.

A worker file written for Kafka Connect starts here unchanged: each of these settings is
accepted and the worker logs one warning for it at start, saying why it changes nothing.
Settings this worker honours are fields of `WorkerConfig`; security settings are
`ClientSecurity`'s; a setting that would change behaviour we do not have is refused
(`REFUSED`), never stored and ignored. Anything else is unknown, and refused with the
closest known name.
"""

from __future__ import annotations

_OFFSETS = (
    "source offsets are written in one request with the records they follow, through the task's "
    "fence (as Kafka Connect's exactly-once source support does), so there is nothing to flush on a timer"
)
_CLIENT_TUNING = "the worker's Kafka clients keep their own network settings (kafka-python's defaults)"
_METRICS = "the worker's metrics are served at /metrics in Prometheus's text format; there is no JMX"
_VERSIONS = "one version of each converter is built in"

INAPPLICABLE: dict[str, str] = {
    "offset.flush.interval.ms": _OFFSETS,
    "offset.flush.timeout.ms": _OFFSETS,
    "exactly.once.source.support": (
        "source records and their offsets are always written together, through each task's fence"
    ),
    "metrics.sample.window.ms": _METRICS,
    "metrics.num.samples": _METRICS,
    "metrics.recording.level": _METRICS,
    "metric.reporters": _METRICS,
    "plugin.discovery": "connectors are Python packages found through their entry points",
    "key.converter.plugin.version": _VERSIONS,
    "value.converter.plugin.version": _VERSIONS,
    "header.converter.plugin.version": _VERSIONS,
    "header.converter": "tasks here write records without headers, so there are none to convert",
    "worker.sync.timeout.ms": (
        "a worker behind on the config topic reads up to where the group's assignment needs it "
        "before it starts work, and stays in the group meanwhile"
    ),
    "worker.unsync.backoff.ms": (
        "a worker behind on the config topic reads up to where the group's assignment needs it "
        "before it starts work, and stays in the group meanwhile"
    ),
    "inter.worker.key.size": "the session key is HmacSHA256's, of its own size",
    **dict.fromkeys(
        (
            "client.dns.lookup",
            "client.id",
            "send.buffer.bytes",
            "receive.buffer.bytes",
            "reconnect.backoff.ms",
            "reconnect.backoff.max.ms",
            "socket.connection.setup.timeout.ms",
            "socket.connection.setup.timeout.max.ms",
            "retry.backoff.ms",
            "retry.backoff.max.ms",
            "request.timeout.ms",
            "connections.max.idle.ms",
            "metadata.max.age.ms",
            "metadata.recovery.strategy",
            "metadata.recovery.rebootstrap.trigger.ms",
        ),
        _CLIENT_TUNING,
    ),  # fmt: skip
}
INAPPLICABLE_PREFIXES: dict[str, str] = {"metrics.context.": _METRICS, "metrics.jmx.": _METRICS}

# Values that are what this worker does anyway: given these, no warning is needed.
MATCHING_VALUES: dict[str, set[str]] = {
    "exactly.once.source.support": {"enabled"},
    "header.converter": {"org.apache.kafka.connect.storage.SimpleHeaderConverter", "SimpleHeaderConverter"},
    "inter.worker.key.generation.algorithm": {"HmacSHA256"},
    "inter.worker.signature.algorithm": {"HmacSHA256"},
    "inter.worker.verification.algorithms": {"HmacSHA256"},
}

# Settings whose other values would change behaviour this worker does not have: refused.
REFUSED: dict[str, str] = {
    "inter.worker.key.generation.algorithm": "the session key is always HmacSHA256",
    "inter.worker.signature.algorithm": "internal requests are always signed with HmacSHA256",
    "inter.worker.verification.algorithms": "internal requests are always verified with HmacSHA256",
}
# Honoured by Kafka Connect but not by this worker yet: refused rather than ignored.
NOT_YET: dict[str, str] = {
    "connector.client.config.override.allowlist": "what connectors may override of their clients is "
    "connector.client.config.override.policy's (None, Principal or All); there is no allowlist policy",
}
# The value of a NOT_YET setting that asks for nothing: accepted without a word.
NOTHING_ASKED: dict[str, set[str]] = {
    "connector.client.config.override.allowlist": {""},
}


def sort_out(settings: dict[str, str]) -> tuple[list[str], list[tuple[str, str]], set[str]]:
    """(warnings, (setting, problem) refusals, names handled here) for the settings this
    module knows; the rest are left to the caller."""
    warnings: list[str] = []
    refusals: list[tuple[str, str]] = []
    handled: set[str] = set()
    for name, raw in settings.items():
        value = str(raw).strip()
        prefix = next((p for p in INAPPLICABLE_PREFIXES if name.startswith(p)), None)
        if name not in INAPPLICABLE and name not in REFUSED and name not in NOT_YET and prefix is None:
            continue
        handled.add(name)
        if value in MATCHING_VALUES.get(name, set()) or value in NOTHING_ASKED.get(name, set()):
            continue
        if name in REFUSED:
            refusals.append((name, f"{value!r} is not supported: {REFUSED[name]}"))
        elif name in NOT_YET:
            refusals.append((name, f"is not supported: {NOT_YET[name]}"))
        else:
            why = INAPPLICABLE[name] if prefix is None else INAPPLICABLE_PREFIXES[prefix]
            warnings.append(f"{name}={value} changes nothing here: {why}")
    return warnings, refusals, handled
