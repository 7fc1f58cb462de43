"""Worker threads: each applies the ops of one interpreter thread.

A client worker keeps one opened client per process. When its thread moves
on to a new process (after an ``info``, an exception or ``end_process``) it
closes the old client and opens a fresh one, because a client that saw an
unknown outcome may be in any state (Jepsen's ``ClientWorker``). Exceptions
never escape a worker: they become ``info`` completions carrying the error.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.protocols import Client, Nemesis, OpDict

log = logging.getLogger(__name__)

STOP = object()

Outbox = Callable[[tuple[Any, OpDict | None]], None]


def error_text(e: BaseException) -> str:
    """A short cause for the history's ``error`` field."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def crashed(op: OpDict, e: BaseException) -> OpDict:
    """The ``info`` completion for an op whose invoke raised: it may or may not
    have happened."""
    return {**op, "type": "info", "error": f"indeterminate: {error_text(e)}"}


class ClientWorker:
    """Applies client ops for one thread, reopening the client per process."""

    def __init__(self, test: Any, client: Client, node: str) -> None:
        self.test, self.template, self.node = test, client, node
        self.client: Client | None = None
        self.process: Any = None

    def _client_for(self, process: Any) -> Client:
        if self.client is not None and process == self.process:
            return self.client
        self.close()
        self.client = self.template.open(self.test, self.node)
        self.process = process
        return self.client

    def handle(self, op: OpDict) -> OpDict:
        try:
            client = self._client_for(op["process"])
        except Exception as e:
            log.warning("could not open a client on %s: %s", self.node, error_text(e))
            error = f"no-client: {error_text(e)}"
            return {**op, "type": "fail", "error": error, "end_process": True}
        try:
            return client.invoke(self.test, op)
        except Exception as e:
            return crashed(op, e)

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close(self.test)
            except Exception as e:
                log.warning("closing a client on %s failed: %s", self.node, error_text(e))
            self.client = None


class NemesisWorker:
    """Applies nemesis ops; an exception becomes an ``info`` (the fault's state is unknown)."""

    def __init__(self, test: Any, nemesis: Nemesis) -> None:
        self.test, self.nemesis = test, nemesis

    def handle(self, op: OpDict) -> OpDict:
        try:
            return self.nemesis.invoke(self.test, op)
        except Exception as e:
            log.warning("nemesis op %s failed: %s", op.get("f"), error_text(e))
            return crashed(op, e)

    def close(self) -> None:
        pass


def spawn(
    key: Any, worker: ClientWorker | NemesisWorker, outbox: Outbox
) -> tuple[queue.SimpleQueue[Any], threading.Thread]:
    """Starts a daemon thread that runs ``worker`` on ops from the returned
    inbox and posts ``(key, completion)`` to ``outbox`` (``key`` names the
    worker, e.g. ``(thread, worker_id)``); ``STOP`` ends it. Daemon, so a
    client stuck in a call can never hang the run's exit."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def loop() -> None:
        try:
            while (op := inbox.get()) is not STOP:
                if op["type"] == "sleep":
                    time.sleep(op["value"] / 1e9)
                    outbox((key, None))
                else:
                    outbox((key, worker.handle(op)))
        finally:
            worker.close()

    name = "-".join(map(str, key)) if isinstance(key, tuple) else str(key)
    t = threading.Thread(target=loop, name=f"jepka-worker-{name}", daemon=True)
    t.start()
    return inbox, t
