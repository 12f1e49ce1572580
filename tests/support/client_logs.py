"""librdkafka's log lines, collected as confluent-kafka hands them to a Python logger, for
tests that check what the client itself saw (its debug contexts: `protocol`, `security`)."""

from __future__ import annotations

import logging


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def having(self, words: str) -> list[str]:
        return [line for line in self.lines if words in line]


def client_logger(name: str) -> tuple[logging.Logger, LogLines]:
    """A logger to pass as confluent-kafka's `logger`, collecting into the returned lines only."""
    logger, lines = logging.getLogger(f"rdkafka.{name}"), LogLines()
    logger.handlers, logger.propagate = [lines], False
    logger.setLevel(logging.DEBUG)
    return logger, lines
