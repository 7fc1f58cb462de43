"""A broker tuned only where the coordinators' timers would slow tests down:
no initial rebalance delay, and a fast scan for timed-out transactions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.launcher import BrokerProcess

COORDINATOR_SETTINGS = (
    "group.initial.rebalance.delay.ms=0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
)


@pytest.fixture
def coord_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker(*COORDINATOR_SETTINGS)
