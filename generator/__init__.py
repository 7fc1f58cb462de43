"""Pure, deterministic op generators (Jepsen's design); see ``core`` for the protocol."""

from __future__ import annotations

from generator.combinators import (
    any_,
    each_thread,
    filter_ops,
    flip_flop,
    limit,
    map_ops,
    mix,
    on_clients,
    on_nemesis,
    on_threads,
    once,
    phases,
    repeat,
    synchronize,
    until_ok,
    with_nemesis,
)
from generator.context import NEMESIS, Context
from generator.core import PENDING, Generator, GenLike, OpDict, OpResult, lift
from generator.rand import Rand
from generator.simulate import simulate
from generator.timing import (
    delay,
    log,
    op_timeout,
    seconds,
    sleep,
    stagger,
    time_limit,
    timeline,
)

__all__ = [
    "NEMESIS",
    "PENDING",
    "Context",
    "GenLike",
    "Generator",
    "OpDict",
    "OpResult",
    "Rand",
    "any_",
    "delay",
    "each_thread",
    "filter_ops",
    "flip_flop",
    "lift",
    "limit",
    "log",
    "map_ops",
    "mix",
    "on_clients",
    "on_nemesis",
    "on_threads",
    "once",
    "op_timeout",
    "phases",
    "repeat",
    "seconds",
    "simulate",
    "sleep",
    "stagger",
    "synchronize",
    "time_limit",
    "timeline",
    "until_ok",
    "with_nemesis",
]
