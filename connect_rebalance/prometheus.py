"""Prometheus' text exposition format, for the coordinator's admin port and the workers.

One small writer so both processes render names, labels and escaping the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Sample = tuple[Mapping[str, str], float]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Exposition:
    """Metric families in order; `text()` is the body of a `/metrics` answer."""

    CONTENT_TYPE = "text/plain"

    def __init__(self) -> None:
        self._lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> Exposition:
        self._lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        self._lines += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in samples]
        return self

    def summary(
        self, name: str, help_text: str, samples: Iterable[tuple[Mapping[str, str], float, int]]
    ) -> Exposition:
        """A summary without quantiles: `_sum` and `_count` per label set."""
        self._lines += [f"# HELP {name} {help_text}", f"# TYPE {name} summary"]
        for labels, total, count in samples:
            self._lines += [
                f"{name}_sum{_labels(labels)} {_number(total)}",
                f"{name}_count{_labels(labels)} {count}",
            ]
        return self

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"
