"""Test-side name for the broker launcher (``broker.launcher``)."""

from broker.launcher import READY, BrokerProcess

__all__ = ["READY", "BrokerProcess"]
