"""The time axis both report figures share: the history's span cut into
equal buckets, so the unseen and lag series line up point for point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BUCKETS = 200


@dataclass(frozen=True)
class Timeline:
    lo: int
    width: int

    @classmethod
    def over(cls, lo: int, hi: int, buckets: int = BUCKETS) -> Timeline:
        return cls(lo, max(1, (hi - lo) // buckets + 1))

    def bucket_of(self, times: np.ndarray) -> np.ndarray:
        """The buckets an array of times falls in."""
        return ((times - self.lo) // self.width).astype(np.int64)

    def end(self, bucket: int) -> int:
        """The time a bucket's point is plotted at: its end."""
        return self.lo + (bucket + 1) * self.width
