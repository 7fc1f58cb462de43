"""Runs a ``RaftClient`` on an asyncio event loop with the real monotonic clock: the
client stays a synchronous state machine, the driver feeds it delivered messages
as they arrive and polls it after each batch, so it acts on a message at once
(a follower fetches again as soon as its fetch is answered), and when the wait of
a fetch it holds as leader runs out; it also polls it every tick for its timers,
then gives the owner (the controller) its own tick. The timers are hundreds of
milliseconds and more, so a tick of 50 ms costs an idle node little and fires them
late by at most that. Messages reach it through a ``RaftMessageQueue`` that the
transport is built with too, so transport and driver never need each other."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

from broker.raft.client import RaftClient
from broker.raft.messages import Envelope


class MonotonicClock:
    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class RaftMessageQueue:
    """Messages for one Raft client (Kafka's ``RaftMessageQueue``): the transport adds
    inbound requests and the responses to its own requests, the driver takes them."""

    def __init__(self) -> None:
        self._messages: collections.deque[Envelope] = collections.deque()
        self._wake = asyncio.Event()

    def add(self, envelope: Envelope) -> None:
        """Queue a message for the client; call from the driver's event loop."""
        self._messages.append(envelope)
        self._wake.set()

    def poll(self) -> Envelope | None:
        return self._messages.popleft() if self._messages else None

    def wakeup(self) -> None:
        self._wake.set()

    async def wait(self) -> None:
        """Until a message is added or ``wakeup`` is called."""
        await self._wake.wait()
        self._wake.clear()


class RaftDriver:
    """Stopping sets a flag and wakes the loop rather than cancelling the task, so a
    stop can never be swallowed half-way through a wait."""

    def __init__(
        self,
        client: RaftClient,
        queue: RaftMessageQueue,
        tick_ms: int = 50,
        on_tick: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.queue = queue
        self.tick_ms = tick_ms
        self.on_tick = on_tick
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.client.start()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self.queue.wakeup()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_tick = loop.time()
        while not self._stopping:
            wake = next_tick
            if (answer_ms := self.client.next_answer_ms) is not None:
                wake = min(wake, (answer_ms + 1) / 1000)  # on the monotonic clock, as the loop
            timer = loop.call_at(wake, self.queue.wakeup)
            await self.queue.wait()
            timer.cancel()
            while not self._stopping and (envelope := self.queue.poll()) is not None:
                self.client.handle(envelope)
            if self._stopping:
                break
            self.client.poll()
            if loop.time() >= next_tick:
                if self.on_tick is not None:
                    self.on_tick()
                next_tick = max(next_tick + self.tick_ms / 1000, loop.time())
