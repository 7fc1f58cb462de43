"""KeyTopics without a cluster to answer: a topic not made is never taken as made."""

from __future__ import annotations

import time

import pytest

from workloads.config import ClientConfig
from workloads.topics import KeyTopics, TopicsNotCreated


def test_a_topic_no_cluster_answers_for_is_refused_and_asked_for_again() -> None:
    config = ClientConfig(bootstrap="127.0.0.1:1", keys=(0, 1), op_timeout_s=5.0)
    topics = KeyTopics(config)
    for _ in range(2):  # not marked as made: the second call asks again
        t0 = time.monotonic()
        with pytest.raises(TopicsNotCreated, match=r"^jepka-t20: "):
            topics.require([41])
        assert time.monotonic() - t0 < config.op_timeout_s  # a request's wait, not an op's
    refused = topics.create([41, 40, 2])
    assert sorted(refused) == ["jepka-t1", "jepka-t20"]
    assert topics.create([]) == {}
