"""Prometheus' text exposition format, for the coordinator's admin port and the workers.

Written by prometheus_client, whose exposition Prometheus and its exporters are tested
against (names, label escaping, number formatting); this module only collects each
`/metrics` answer's families in order, from figures the processes already keep.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

Sample = tuple[Mapping[str, str], float]


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


class Exposition:
    """Metric families in order; `text()` is the body of a `/metrics` answer."""

    CONTENT_TYPE = CONTENT_TYPE_LATEST.split(";")[0]

    def __init__(self) -> None:
        self._families: list[Metric] = []

    def family(self, name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> Exposition:
        """A counter (its name ends in `_total`) or a gauge, one sample per label set."""
        samples = list(samples)
        names = sorted({key for labels, _ in samples for key in labels})
        maker = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = maker(name, help_text, labels=names)
        for labels, value in samples:
            family.add_metric([str(labels.get(key, "")) for key in names], float(value))
        self._families.append(family)
        return self

    def summary(
        self, name: str, help_text: str, samples: Iterable[tuple[Mapping[str, str], float, int]]
    ) -> Exposition:
        """A summary without quantiles: `_sum` and `_count` per label set."""
        samples = list(samples)
        names = sorted({key for labels, _, _ in samples for key in labels})
        family = SummaryMetricFamily(name, help_text, labels=names)
        for labels, total, count in samples:
            family.add_metric([str(labels.get(key, "")) for key in names], count_value=count, sum_value=total)
        self._families.append(family)
        return self

    def histogram(
        self,
        name: str,
        help_text: str,
        bounds: Sequence[float],
        samples: Iterable[tuple[Mapping[str, str], Sequence[int], float]],
    ) -> Exposition:
        """A histogram per label set: its counts per bucket (upper `bounds`, then +Inf; not
        cumulative) and the sum of what was observed."""
        samples = list(samples)
        names = sorted({key for labels, _, _ in samples for key in labels})
        family = HistogramMetricFamily(name, help_text, labels=names)
        edges = [*(floatToGoString(b) for b in bounds), "+Inf"]
        for labels, counts, total in samples:
            cumulative = list(itertools.accumulate(counts))
            family.add_metric(
                [str(labels.get(key, "")) for key in names], list(zip(edges, cumulative, strict=True)), total
            )
        self._families.append(family)
        return self

    def text(self) -> str:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families(self._families))
        return generate_latest(registry).decode()
