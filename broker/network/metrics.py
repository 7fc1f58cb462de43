"""Request handling times per API (Kafka's request metrics, in small).

Each connection records how long the broker took from a decoded request to
its encoded response (for Fetch that includes the long-poll wait). The last
``WINDOW`` samples per API are kept, so memory stays bounded, and a summary
is logged at shutdown: it separates the broker's own latency from the
client's and the scheduler's when a benchmark looks slow.
"""

from __future__ import annotations

import statistics
from collections import deque

from kio.schema.index import api_key_map

WINDOW = 65_536


class RequestMetrics:
    def __init__(self) -> None:
        self._samples: dict[int, deque[float]] = {}

    def record(self, api_key: int, seconds: float) -> None:
        self._samples.setdefault(api_key, deque(maxlen=WINDOW)).append(seconds)

    def summary(self) -> list[str]:
        """One line per API: ``request times produce: n=.. p50=..ms p99=..ms max=..ms``."""
        lines = []
        for api_key, samples in sorted(self._samples.items()):
            values = sorted(samples)
            p50 = values[len(values) // 2]
            p99 = statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]
            lines.append(
                f"request times {api_key_map.get(api_key, api_key)}: n={len(values)} "
                f"p50={p50 * 1000:.3f}ms p99={p99 * 1000:.3f}ms max={values[-1] * 1000:.3f}ms"
            )
        return lines
