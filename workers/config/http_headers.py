"""The REST API's cross-origin answers and configured response headers, as Kafka Connect's.

- `access.control.allow.origin` (comma-separated origins, `*` for any, `*` inside one for a
  wildcard such as `https://*.example.com`) turns on CORS as Jetty's CrossOriginFilter does
  for Kafka Connect: a request from an allowed origin is answered with
  `Access-Control-Allow-Origin: <its origin>`, and a preflight (`OPTIONS` with
  `Access-Control-Request-Method`) with the allowed methods — `access.control.allow.methods`,
  else GET, POST, HEAD — and headers. Browser UIs for Kafka Connect need it.
- `response.http.headers.config` (Jetty's HeaderFilter rules, comma-separated
  `[action] [name]: [value]`, actions set, add, setDate, addDate) adds headers to every
  answer, e.g. `set X-Frame-Options: DENY`. setDate and addDate take milliseconds from now
  and write an HTTP date.

The rules are checked when the worker starts (`header_rule_problems`), with Kafka's messages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]
DEFAULT_METHODS = "GET,POST,HEAD"
DEFAULT_HEADERS = "X-Requested-With,Content-Type,Accept,Origin"
PREFLIGHT_MAX_AGE_S = "1800"
ACTIONS = ("set", "add", "setDate", "addDate")


@dataclass(frozen=True)
class HeaderRule:
    action: str
    name: str
    value: str

    def apply(self, headers: web.StreamResponse) -> None:
        value = self.value
        if self.action in ("setDate", "addDate"):
            value = formatdate(time.time() + int(self.value) / 1000, usegmt=True)
        if self.action.startswith("set"):
            headers.headers[self.name] = value
        else:
            headers.headers.add(self.name, value)


def _rule(text: str) -> HeaderRule | str:
    """One rule, or what is wrong with it (Kafka Connect's words)."""
    action, _, rest = text.strip().partition(" ")
    name, colon, value = rest.partition(":")
    if not colon or not name.strip() or not action:
        return (f"Invalid format of header config '{text.strip()}'. "
                "Expected: '[action] [header name]:[header value]'")  # fmt: skip
    if action not in ACTIONS:
        return f"Invalid header config action: '{action}'. Expected one of {list(ACTIONS)}"
    if action.endswith("Date") and not value.strip().lstrip("-").isdigit():
        return f"Invalid header config '{text.strip()}': {action} takes milliseconds from now"
    return HeaderRule(action, name.strip(), value.strip())


def header_rule_problems(config: str) -> list[str]:
    """What is wrong with `response.http.headers.config` (nothing: [])."""
    return [found for text in config.split(",") if text.strip() if isinstance(found := _rule(text), str)]


def header_rules(config: str) -> list[HeaderRule]:
    return [
        found for text in config.split(",") if text.strip() if isinstance(found := _rule(text), HeaderRule)
    ]


def _origin_pattern(origins: str) -> re.Pattern[str] | None:
    """The allowed origins as one pattern (None: any origin)."""
    allowed = [o.strip() for o in origins.split(",") if o.strip()]
    if "*" in allowed:
        return None
    return re.compile("|".join(re.escape(o).replace(r"\*", ".*") for o in allowed))


def cross_origin(
    origins: str, methods: str
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """CORS for the allowed `origins` (see the module's docstring)."""
    pattern = _origin_pattern(origins)
    allowed_methods = [m.strip().upper() for m in (methods or DEFAULT_METHODS).split(",") if m.strip()]

    @web.middleware
    async def answered(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is None or (pattern is not None and not pattern.fullmatch(origin)):
            return await handler(request)
        wanted = request.headers.get("Access-Control-Request-Method")
        if request.method == "OPTIONS" and wanted is not None:
            response = web.Response(status=200)
            if wanted.upper() in allowed_methods:
                response.headers["Access-Control-Allow-Methods"] = ",".join(allowed_methods)
                response.headers["Access-Control-Allow-Headers"] = DEFAULT_HEADERS
                response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE_S
                response.headers["Access-Control-Allow-Origin"] = origin
                response.headers["Access-Control-Allow-Credentials"] = "true"
            return response
        response = await handler(request)
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Allow-Credentials"] = "true"
        response.headers.add("Vary", "Origin")
        return response

    return answered


def configured_headers(
    rules: list[HeaderRule],
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """`response.http.headers.config` applied to every answer, errors included."""

    @web.middleware
    async def with_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        for rule in rules:
            rule.apply(response)
        return response

    return with_headers
