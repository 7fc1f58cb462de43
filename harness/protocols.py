"""The roles the interpreter drives, each a small protocol with its contract.

A ``Client`` applies one op to the system and a ``Nemesis`` one fault op
(the DB adapters are ``control.db``, the checks ``checkers``). Both roles
have a ``Noop`` version, and the runner always wraps them in the
``Validating`` versions, which turn a broken contract into a clear error
instead of a corrupt history (Jepsen's ``client/validate``).

Ops cross these protocols as plain dicts (see ``generator.core``); an
invocation has ``type == "invoke"`` and its completion has ``type`` ``ok``
(happened), ``fail`` (certainly did not happen) or ``info`` (unknown).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

OpDict = dict[str, Any]

COMPLETION_TYPES = frozenset({"ok", "fail", "info"})


class InvalidCompletion(Exception):
    """A client or nemesis returned something that is not a completion of its op."""


@runtime_checkable
class Client(Protocol):
    """Applies ops to the system for one process at a time.

    ``open`` returns a client bound to ``node`` for a new process (the
    receiver is a template and is not changed); ``setup`` runs once, before
    the test, on one opened client (create topics...); ``invoke`` returns the
    completion of ``op``, with the same ``process`` and ``f``; it may raise,
    and the interpreter records an ``info``. ``teardown`` runs once after the
    test; ``close`` releases the process's connections.
    """

    def open(self, test: Any, node: str) -> Client: ...
    def setup(self, test: Any) -> None: ...
    def invoke(self, test: Any, op: OpDict) -> OpDict: ...
    def teardown(self, test: Any) -> None: ...
    def close(self, test: Any) -> None: ...


@runtime_checkable
class Nemesis(Protocol):
    """Applies fault ops (process ``"nemesis"``). ``setup`` returns the
    nemesis to use; ``fs`` names the ``f`` values it handles; ``teardown``
    must leave the cluster healed."""

    def setup(self, test: Any) -> Nemesis: ...
    def invoke(self, test: Any, op: OpDict) -> OpDict: ...
    def teardown(self, test: Any) -> None: ...
    def fs(self) -> frozenset[str]: ...


def check_completion(invocation: OpDict, completion: Any, who: str) -> OpDict:
    """The completion, if it is one for ``invocation``; else InvalidCompletion."""
    if not isinstance(completion, dict):
        raise InvalidCompletion(f"{who} returned {type(completion).__name__}, not an op dict")
    if completion.get("type") not in COMPLETION_TYPES:
        raise InvalidCompletion(
            f"{who} returned type {completion.get('type')!r} for {invocation['f']!r}; "
            "expected ok, fail or info"
        )
    for key in ("process", "f"):
        if completion.get(key) != invocation.get(key):
            raise InvalidCompletion(
                f"{who} changed {key} from {invocation.get(key)!r} to {completion.get(key)!r}"
            )
    return completion


class NoopClient:
    """Completes every op ``ok`` with its value unchanged, touching nothing."""

    def open(self, test: Any, node: str) -> NoopClient:
        return self

    def setup(self, test: Any) -> None:
        pass

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        return {**op, "type": "ok"}

    def teardown(self, test: Any) -> None:
        pass

    def close(self, test: Any) -> None:
        pass


class ValidatingClient:
    """Wraps a client and checks every completion it returns."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def open(self, test: Any, node: str) -> ValidatingClient:
        return ValidatingClient(self.client.open(test, node))

    def setup(self, test: Any) -> None:
        self.client.setup(test)

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        return check_completion(op, self.client.invoke(test, op), type(self.client).__name__)

    def teardown(self, test: Any) -> None:
        self.client.teardown(test)

    def close(self, test: Any) -> None:
        self.client.close(test)


class NoopNemesis:
    """Does nothing; every op completes ``info`` (nothing is known to have happened)."""

    def setup(self, test: Any) -> NoopNemesis:
        return self

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        return {**op, "type": "info"}

    def teardown(self, test: Any) -> None:
        pass

    def fs(self) -> frozenset[str]:
        return frozenset()


class ValidatingNemesis:
    """Wraps a nemesis; checks what ``setup`` and ``invoke`` return."""

    def __init__(self, nemesis: Nemesis) -> None:
        self.nemesis = nemesis

    def setup(self, test: Any) -> ValidatingNemesis:
        ready = self.nemesis.setup(test)
        if ready is None or not hasattr(ready, "invoke"):
            raise InvalidCompletion(
                f"{type(self.nemesis).__name__}.setup returned {ready!r}, not a nemesis"
            )
        return ValidatingNemesis(ready)

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        return check_completion(op, self.nemesis.invoke(test, op), type(self.nemesis).__name__)

    def teardown(self, test: Any) -> None:
        self.nemesis.teardown(test)

    def fs(self) -> frozenset[str]:
        return self.nemesis.fs()
