"""Kafka Connect's error answers: `{"error_code", "message"}` with the status as the code,
raised as a RestError by any resource and written by one function; and a request's JSON
body, read once for all of them (a body that is no JSON is the caller's 400)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


class RestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error_code": status, "message": message}, status=status, headers=headers)


async def json_body(request: web.Request) -> Any:
    try:
        return await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RestError(400, f"Invalid JSON in the request body: {exc}") from exc
