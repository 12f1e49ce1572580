"""Byte rates over sampled windows, and the throttle time an excess earns, as Kafka measures them.

A rate is kept in `quota.window.num` samples of `quota.window.size.seconds` each. Its value
is the bytes of the samples still in the window over the time they span, counted as at
least the window less one sample, so a first burst is not read as an enormous rate. When a
recording takes the rate over its bound, the throttle time is how long the client must stay
quiet for the rate to come back to the bound: (rate - bound) / bound * the window measured.
As for Kafka's byte-rate quotas it has no upper bound: one request far over a small quota
earns a long silence, which is what keeps the rate at the bound. With KIP-219 the answer
carries that time at once and the connection reads nothing more until it has passed.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from coordinator.quotas.entities import QuotaSettings, QuotaTags


@dataclass(slots=True)
class SampledRate:
    samples: int
    window_ms: int
    _windows: deque[list[float]] = field(default_factory=deque)  # [start ms, bytes]

    def record(self, value: float, now_ms: float) -> None:
        windows = self._windows
        if not windows or now_ms >= windows[-1][0] + self.window_ms:
            windows.append([now_ms, 0.0])
            while len(windows) > self.samples:
                windows.popleft()
        windows[-1][1] += value

    def measure(self, now_ms: float) -> tuple[float, float]:
        """(bytes per second, the window it was measured over in ms)."""
        windows, span = self._windows, self.samples * self.window_ms
        while windows and windows[0][0] <= now_ms - span:
            windows.popleft()
        total = sum(value for _, value in windows)
        elapsed = now_ms - windows[0][0] if windows else 0.0
        full_windows = int(elapsed // self.window_ms)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return total * 1000 / elapsed if elapsed > 0 else 0.0, elapsed

    @property
    def idle(self) -> bool:
        return not self._windows


@dataclass(slots=True)
class Throttles:
    """Measured rates per quota key and sharing tags, against the bounds `settings` gives."""

    settings: QuotaSettings
    samples: int = 11
    window_ms: int = 1000
    _rates: dict[tuple[str, QuotaTags], SampledRate] = field(default_factory=dict)
    # Per quota key, since start: answers throttled, and the throttle time they were given.
    throttled: Counter[str] = field(default_factory=Counter)
    throttled_ms: Counter[str] = field(default_factory=Counter)

    def record(
        self,
        key: str,
        user: str,
        client_id: str,
        nbytes: int,
        now_ms: float,
        *,
        keep_if_throttled: bool = True,
    ) -> int:
        """Count `nbytes` against the quota on `key` that applies, and return the throttle time
        in ms (0 within the bound, or with no quota). A fetch passes keep_if_throttled=False:
        its answer then goes out empty, so its bytes are not counted."""
        applying = self.settings.applying(key, user, client_id)
        if applying is None:
            return 0
        bound, tags = applying
        rate = self._rates.get((key, tags))
        if rate is None:
            rate = self._rates[(key, tags)] = SampledRate(self.samples, self.window_ms)
        rate.record(nbytes, now_ms)
        observed, window = rate.measure(now_ms)
        if observed <= bound:
            return 0
        if not keep_if_throttled:
            rate.record(-nbytes, now_ms)
        throttle = round((observed - bound) / bound * window)
        self.throttled[key] += 1
        self.throttled_ms[key] += throttle
        return throttle

    def most_in_window(self, key: str, user: str, client_id: str) -> int | None:
        """The most bytes one answer may carry under the quota on `key` that applies: what the
        bound allows over the shortest window measured. A fetch is cut to it, as Kafka cuts
        one, so that a single answer can always pass; None with no quota."""
        applying = self.settings.applying(key, user, client_id)
        if applying is None:
            return None
        return int(applying[0] * (self.samples - 1) * self.window_ms / 1000)

    def forget_idle(self, now_ms: float) -> None:
        """Drop rates with nothing left in their window, so client ids that come and go do not
        accumulate."""
        for key, rate in list(self._rates.items()):
            rate.measure(now_ms)
            if rate.idle:
                del self._rates[key]
