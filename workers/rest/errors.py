"""Kafka Connect's error answers: `{"error_code", "message"}` with the status as the code,
raised as a RestError by any route (server.py, loggers.py) and written by one function."""

from __future__ import annotations

from aiohttp import web


class RestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error_code": status, "message": message}, status=status, headers=headers)
