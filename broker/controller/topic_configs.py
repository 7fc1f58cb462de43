"""Topic configuration changes (IncrementalAlterConfigs and the older
AlterConfigs), worked out the same way by a single node and by the active
controller: the new overrides from the current ones and the request's
operations, then checked as a new topic's configuration is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from broker.config import TOPIC_KEYS, ConfigError, parse_value
from broker.errors import ErrorCode, KafkaError

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"
#: the list-valued topic configs, the only ones APPEND and SUBTRACT apply to
LISTS = ("cleanup.policy",)

#: one requested change: (config name, operation, value)
Op = tuple[str, int, str | None]


def altered(current: Mapping[str, str], ops: Sequence[Op], incremental: bool) -> dict[str, str]:
    """The topic's overrides after ``ops``: applied one by one to ``current``
    (IncrementalAlterConfigs), or replacing them all (AlterConfigs)."""
    if not incremental:
        return {name: value for name, _, value in ops if value is not None}
    new = dict(current)
    for name, op, value in ops:
        if op == SET:
            new[name] = value or ""
        elif op == DELETE:
            new.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in LISTS:
                raise KafkaError(ErrorCode.invalid_config, f"{name} is not a list")
            default = str(TOPIC_KEYS[name].default)
            items = [x for x in new.get(name, default).split(",") if x]
            given = [x for x in (value or "").split(",") if x]
            if op == APPEND:
                items += [x for x in given if x not in items]
            else:
                items = [x for x in items if x not in given]
            new[name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.invalid_request, f"unknown config operation {op}")
    return new


def check(configs: Mapping[str, str], replication_factor: int) -> None:
    """Raises INVALID_CONFIG for an unknown key, a bad value, or a setting the
    topic's replication factor cannot meet."""
    for name, text in configs.items():
        try:
            parse_value(name, text, "topic config", TOPIC_KEYS)
        except ConfigError as e:
            raise KafkaError(ErrorCode.invalid_config, str(e)) from None
    if configs.get(UNCLEAN, "false") not in ("true", "false"):
        raise KafkaError(ErrorCode.invalid_config, f"{UNCLEAN} must be true or false")
    min_isr = configs.get(MIN_ISR, "1")
    if not min_isr.isdigit() or not 0 < int(min_isr) <= replication_factor:
        raise KafkaError(
            ErrorCode.invalid_config, f"{MIN_ISR} must be between 1 and {replication_factor}"
        )
