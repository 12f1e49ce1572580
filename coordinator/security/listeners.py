"""The coordinator's Kafka listeners: names, security protocols and addresses.

`listeners` is Kafka's comma-separated list of `NAME://host:port`; each name maps to a
security protocol through `listener.security.protocol.map` (whose default maps PLAINTEXT,
SSL, SASL_PLAINTEXT and SASL_SSL to themselves). A bare `host:port` is a PLAINTEXT listener,
as this coordinator has always accepted. `advertised.listeners` says, per listener name,
which address Metadata and FindCoordinator hand to clients that connected to it.

A protocol we cannot serve is refused here with a message naming it: a listener is never
started with less security than its name asks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class SecurityProtocol(StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_NAME = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # upper case, as Kafka normalises listener names
    protocol: SecurityProtocol
    host: str
    port: int

    def url(self, port: int | None = None) -> str:
        return f"{self.name}://{self.host}:{self.port if port is None else port}"


def parse_protocol_map(value: str) -> dict[str, SecurityProtocol]:
    """`NAME:PROTOCOL,...`; an unknown protocol is refused with the names we serve."""
    mapping: dict[str, SecurityProtocol] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        if not sep or not _NAME.fullmatch(name.strip()):
            raise ValueError(f"{entry!r} is not NAME:PROTOCOL")
        mapping[name.strip().upper()] = _protocol(protocol.strip(), f"listener {name.strip()!r}")
    return mapping


def _protocol(value: str, where: str) -> SecurityProtocol:
    try:
        return SecurityProtocol(value.upper())
    except ValueError:
        served = ", ".join(p.value for p in SecurityProtocol)
        raise ValueError(
            f"security protocol {value!r} of {where} is not supported; use one of {served}"
        ) from None


def host_and_port(address: str, where: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{where} {address!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


def parse_listeners(value: str, protocol_map: dict[str, SecurityProtocol]) -> list[Listener]:
    """Every listener of a `listeners`-style value, each with its security protocol."""
    listeners: list[Listener] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        if "://" in entry:
            name, address = entry.split("://", 1)
            if not _NAME.fullmatch(name):
                raise ValueError(f"listener name {name!r} in {entry!r} is not letters, digits and '_'")
            name = name.upper()
            if name not in protocol_map:
                raise ValueError(
                    f"listener {name} has no security protocol: add {name}:<protocol> to "
                    f"listener.security.protocol.map, or name it after a protocol "
                    f"({', '.join(p.value for p in SecurityProtocol)})"
                )
            protocol = protocol_map[name]
        else:
            name, address, protocol = "PLAINTEXT", entry, SecurityProtocol.PLAINTEXT
        host, port = host_and_port(address, "listener")
        listeners.append(Listener(name, protocol, host, port))
    if not listeners:
        raise ValueError(f"{value!r} names no listener")
    names = [listener.name for listener in listeners]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"listener name {repeated[0]} appears more than once")
    ports = [listener.port for listener in listeners if listener.port != 0]
    if len(ports) != len(set(ports)):
        raise ValueError(f"two listeners in {value!r} use the same port")
    return listeners
