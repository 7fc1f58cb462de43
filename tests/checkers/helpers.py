"""Reading results in tests: which anomaly kinds touch which keys."""

from __future__ import annotations

from typing import Any


def instance_keys(instance: dict[str, Any]) -> set[int]:
    """Every key an anomaly instance is about (cycles: the keys of their steps)."""
    if "key" in instance:
        return {instance["key"]}
    return {s["key"] for s in instance.get("steps", []) if s.get("key") is not None}


def kinds_at(result: dict[str, Any], keys: set[int]) -> set[str]:
    return {
        kind
        for kind, instances in result["anomalies"].items()
        for inst in instances
        if instance_keys(inst) & keys
    }
