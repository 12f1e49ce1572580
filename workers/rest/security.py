"""Who may call a worker's REST API: authentication (401) and authorization (403).

Authentication is Kafka Connect's where it has one:
- HTTP basic authentication as its BasicAuthSecurityRestExtension does it
  (`rest.extension.classes`): the JAAS file (`java.security.auth.login.config`) has a
  `KafkaConnect` section whose PropertyFileLoginModule names a credentials file of
  `user: password` lines; the principal is `User:<user>`. No or wrong credentials: 401.
- client certificates on an `https://` listener (`ssl.client.auth`): the principal is the
  certificate's subject, `User:CN=...,O=...` as Kafka's default principal builder writes it
  (`connect_rebalance.tls_server.certificate_principal`, as the coordinator's listeners do).
  Basic authentication, where it is on, decides the principal.
As in Kafka Connect, the internal endpoint `POST /connectors/{name}/tasks` needs no
credentials: it is authenticated by the session key's signature (`session_key`).

Authorization is this project's, as Kafka Connect has none: `rest.authorized.principals`
(semicolon-separated, as Kafka's `super.users`) lists who may use the API at all, and
`rest.read.only.principals` who may only read (GET, and validating a config); any other
request from them is 403. With neither, every authenticated principal may do everything.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from pathlib import Path

from aiohttp import web

from connect_rebalance.jaas import parse_file
from connect_rebalance.properties import ConfigError, read_properties
from connect_rebalance.tls_server import certificate_principal
from workers.config.worker import WorkerConfig

JAAS_SECTION = "KafkaConnect"
LOGIN_MODULE = "PropertyFileLoginModule"
READS = ("GET", "HEAD")


class Refused(Exception):
    """401 or 403, with Kafka Connect's JSON error and, for 401, a challenge header."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def principals(value: str) -> frozenset[str]:
    return frozenset(p.strip() for p in value.split(";") if p.strip())


def load_credentials(jaas_file: str) -> dict[str, str]:
    """user -> password, from the credentials file the JAAS file's KafkaConnect section names."""
    try:
        sections = parse_file(Path(jaas_file).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"java.security.auth.login.config: cannot read {jaas_file}: {exc}") from exc
    modules = [m for m in sections.get(JAAS_SECTION, []) if m.simple_name == LOGIN_MODULE]
    if not modules or not modules[0].options.get("file"):
        raise ConfigError(
            f"java.security.auth.login.config: {jaas_file} has no {JAAS_SECTION} section with a "
            f'{LOGIN_MODULE} and its file="..." option'
        )
    try:
        return read_properties(Path(modules[0].options["file"]))
    except OSError as exc:
        raise ConfigError(f"java.security.auth.login.config: credentials file: {exc}") from exc


def is_internal(request: web.Request) -> bool:
    """Kafka Connect's internal request, authenticated by its signature instead."""
    parts = request.raw_path.split("?", 1)[0].strip("/").split("/")
    return request.method == "POST" and len(parts) == 3 and parts[0] == "connectors" and parts[2] == "tasks"


def is_read(request: web.Request) -> bool:
    return request.method in READS or (request.method == "PUT" and request.path.endswith("/config/validate"))


class RestAuthenticator:
    def __init__(self, config: WorkerConfig) -> None:
        self.credentials = load_credentials(config.jaas_config_file) if config.jaas_config_file else None
        self.client_certificates = config.rest_tls is not None and config.rest_client_auth != "none"
        self.authorized = principals(config.rest_authorized_principals) or None
        self.read_only = principals(config.rest_read_only_principals)
        if (self.authorized or self.read_only) and not (
            self.credentials is not None or self.client_certificates
        ):
            raise ConfigError(
                "rest.authorized.principals and rest.read.only.principals need authentication: "
                "basic (rest.extension.classes) or client certificates (ssl.client.auth)"
            )

    @property
    def enabled(self) -> bool:
        return self.credentials is not None or self.client_certificates

    def principal(self, request: web.Request) -> str | None:
        if self.credentials is not None:
            return "User:" + self._basic_user(request.headers.get("Authorization", ""))
        if self.client_certificates and request.transport is not None:
            tls = request.transport.get_extra_info("ssl_object")
            der = tls.getpeercert(binary_form=True) if tls is not None else None
            if der:
                return certificate_principal(der)
        return None

    def _basic_user(self, header: str) -> str:
        assert self.credentials is not None
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic" or not encoded:
            raise Refused(401, "User cannot access the resource: no basic authentication credentials")
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise Refused(401, "User cannot access the resource: malformed basic credentials") from exc
        known = self.credentials.get(user)
        if not sep or known is None or not hmac.compare_digest(known.encode(), password.encode()):
            raise Refused(401, "User cannot access the resource: invalid username or password")
        return user

    def authorize(self, principal: str | None, request: web.Request) -> None:
        if self.authorized is None and not self.read_only:
            return
        if principal is None:
            raise Refused(401, "User cannot access the resource: no client certificate or credentials")
        if principal in self.read_only:
            if not is_read(request):
                raise Refused(403, f"{principal} may only read: {request.method} {request.path} is refused")
        elif self.authorized is not None and principal not in self.authorized:
            raise Refused(403, f"{principal} is not authorized to use this worker's REST API")

    def check(self, request: web.Request) -> None:
        """Raises Refused unless the request may go on."""
        if self.enabled and not is_internal(request):
            self.authorize(self.principal(request), request)
