import itertools
import re

import pytest

from tests.eventually import eventually


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count(1)
    answers = {1: None, 2: 0, 3: "ready", 4: "too late"}
    assert eventually(lambda: answers[next(calls)], 5, interval=0) == "ready"
    assert next(calls) == 4  # not called again once true


def test_a_true_first_call_does_not_wait() -> None:
    assert eventually(lambda: (0,), 0) == (0,)


def test_timeout_raises_naming_what_and_the_last_value() -> None:
    message = re.escape("leader elected (not within 0.03 s); last value: False")
    with pytest.raises(AssertionError, match=message):
        eventually(lambda: False, 0.03, interval=0.01, what="leader elected")


def test_a_callable_what_describes_the_state_at_the_timeout() -> None:
    state = ["before"]

    def check() -> bool:
        state[0] = "after"
        return False

    with pytest.raises(AssertionError, match=r"^state after "):
        eventually(check, 0, what=lambda: f"state {state[0]}")


def test_retry_on_retries_those_exceptions_and_reports_the_last() -> None:
    calls = itertools.count(1)

    def flaky() -> str:
        if next(calls) < 3:
            raise ConnectionError("not yet")
        return "up"

    assert eventually(flaky, 5, interval=0, retry_on=(OSError,)) == "up"

    def down() -> None:
        raise ConnectionError("down")

    with pytest.raises(AssertionError, match=r"last error: ConnectionError\('down'\)") as info:
        eventually(down, 0.02, interval=0.01, retry_on=(ConnectionError,))
    assert isinstance(info.value.__cause__, ConnectionError)


def test_other_exceptions_propagate_at_once() -> None:
    calls = itertools.count(1)

    def broken() -> None:
        next(calls)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        eventually(broken, 5, retry_on=(OSError,))
    assert next(calls) == 2
