"""A pure, splittable random source for generators.

Generators must be pure so that a run replays exactly from ``--seed``: calling
``op`` twice on the same generator has to give the same answer, and only the
generator that is *kept* may advance. A shared ``random.Random`` breaks that
(an op that is asked for but discarded would still consume numbers), so each
random generator carries its own immutable :class:`Rand` and returns the
advanced one with its next state. The stream is SplitMix64, which is tiny,
fast in pure Python and passes BigCrush.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15

T = TypeVar("T")


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class Rand:
    """An immutable random state; every draw returns ``(value, next_rand)``."""

    __slots__ = ("state",)

    def __init__(self, state: int = 0) -> None:
        self.state = state & _MASK

    @classmethod
    def derive(cls, seed: int, label: str) -> Rand:
        """An independent stream for one named consumer of a run's seed."""
        digest = hashlib.blake2b(f"{seed}/{label}".encode(), digest_size=8).digest()
        return cls(int.from_bytes(digest, "big"))

    def split(self, label: str) -> Rand:
        """A stream independent of this one, named so the split is stable."""
        return Rand.derive(self.state, label)

    def u64(self) -> tuple[int, Rand]:
        nxt = (self.state + _GAMMA) & _MASK
        return _mix(nxt), Rand(nxt)

    def random(self) -> tuple[float, Rand]:
        """A float uniform in [0, 1)."""
        v, r = self.u64()
        return (v >> 11) * (1.0 / (1 << 53)), r

    def below(self, n: int) -> tuple[int, Rand]:
        """An int uniform in [0, n); n must be positive."""
        if n <= 0:
            raise ValueError(f"below() needs a positive bound, got {n}")
        v, r = self.u64()
        return v % n, r

    def choice(self, items: Sequence[T]) -> tuple[T, Rand]:
        i, r = self.below(len(items))
        return items[i], r

    def chance(self, p: float) -> tuple[bool, Rand]:
        """True with probability p."""
        v, r = self.random()
        return v < p, r

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rand) and other.state == self.state

    def __hash__(self) -> int:
        return hash(self.state)

    def __repr__(self) -> str:
        return f"Rand({self.state:#x})"
