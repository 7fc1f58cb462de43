"""The eos copier against a reference broker subprocess: copies, commits its
offsets in the transaction, and a successor process resumes after them."""

from __future__ import annotations

from typing import Any

import pytest

from workloads.config import ClientConfig
from workloads.eos import EosClient, owned_keys

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.slow]

INPUTS, OUTPUTS = [0, 1], [2, 3]


def invoke(client: EosClient, process: int, f: str, value: Any, **extra: Any) -> dict:
    op = {"type": "invoke", "process": process, "f": f, "value": value, **extra}
    return client.invoke({}, op)


def copy_until_empty(client: EosClient, process: int) -> list[list[Any]]:
    sends: list[list[Any]] = []
    for _ in range(10):
        done = invoke(client, process, "txn", [["poll"]], copy=True, poll_ms=1000)
        assert done["type"] == "ok", done
        copied = [m for m in done["value"] if m[0] == "send"]
        if not copied and sends:
            return sends
        sends += copied
    return sends


def test_copier_copies_once_and_a_successor_resumes_after_its_commits(broker: Any) -> None:
    config = ClientConfig(
        bootstrap=broker.bootstrap,
        keys=tuple(INPUTS + OUTPUTS),
        transactional=True,
        group_id="eos-test",
        op_timeout_s=5.0,
    )
    template = EosClient(config, INPUTS, concurrency=1)
    template.setup({})
    first = template.open({}, "n1")
    try:
        assert invoke(first, 0, "assign", owned_keys(INPUTS, 1, 0))["type"] == "ok"
        for v in (1, 2):
            assert invoke(first, 0, "send", [["send", 0, v]])["type"] == "ok"
        assert invoke(first, 0, "send", [["send", 1, 1]])["type"] == "ok"
        copied = copy_until_empty(first, 0)
        assert sorted((k, v) for _, k, (_, v) in copied) == [(2, 1), (2, 2), (3, 1)]
        assert all(offset is not None for _, _, (offset, _) in copied)
    finally:
        first.close({})
    second = template.open({}, "n1")  # the thread's next process: same transactional id
    try:
        assert invoke(second, 1, "assign", INPUTS)["type"] == "ok"
        assert invoke(second, 1, "send", [["send", 0, 3]])["type"] == "ok"
        copied = copy_until_empty(second, 1)
        assert [(k, v) for _, k, (_, v) in copied] == [(2, 3)]  # nothing copied twice
    finally:
        second.close({})
