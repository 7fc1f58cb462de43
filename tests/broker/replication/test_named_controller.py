"""The controller a broker's Metadata names must be a broker in the same answer:
librdkafka sends CreateTopics and DeleteTopics to it and, when that id is missing
from the broker list (the active controller not yet unfenced in this broker's
image), waits for it without end."""

from __future__ import annotations

from broker.replication.metadata_cache import named_controller


def test_the_active_controller_is_named_when_listed() -> None:
    assert named_controller(5, 4, [1, 2, 3, 4, 5]) == 5


def test_an_unlisted_active_controller_gives_way_to_this_broker() -> None:
    assert named_controller(5, 4, [1, 2, 3, 4]) == 4


def test_a_fenced_broker_names_another_listed_one() -> None:
    assert named_controller(5, 4, [2, 3]) in (2, 3)
    assert named_controller(None, 4, [3]) == 3


def test_no_listed_broker_names_none() -> None:
    assert named_controller(5, 4, []) == -1
