"""``PeerConnection.gone`` tells a peer whose process is gone (refused or closed
connections) from one that is only silent (paused, or its packets dropped): a new
controller cuts the session of its predecessor's node only in the first case."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from broker.replication.local_cluster import free_ports
from broker.replication.peer_client import PeerConnection, PeerError

REQUEST = ApiVersionsRequest(client_software_name="t", client_software_version="1")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _close_at_once(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.close()


async def _never_answer(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
    await reader.read()  # holds the connection open until the client closes it


async def _gone_after_failure(handler: Handler | None) -> bool:
    port = free_ports(1)[0]
    server = await asyncio.start_server(handler, "127.0.0.1", port) if handler else None
    peer = PeerConnection("127.0.0.1", port, "t")
    try:
        with pytest.raises(PeerError):
            await peer.request(REQUEST, 0.3)
        return peer.gone
    finally:
        peer.close()
        if server is not None:
            server.close()
            await server.wait_closed()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("handler", "gone"),
    [(None, True), (_close_at_once, True), (_never_answer, False)],
    ids=["refused", "closed-by-peer", "silent"],
)
def test_only_refused_or_closed_means_gone(handler: Handler | None, gone: bool) -> None:
    assert asyncio.run(_gone_after_failure(handler)) is gone


def test_a_cancel_that_meets_the_end_of_an_exchange_is_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fetcher loop cancelled at shutdown just as its peer closes the connection
    must stop, not retry forever (3.11's ``wait_for`` returned the exchange's
    outcome instead and the stop hung)."""

    async def scenario() -> None:
        peer = PeerConnection("127.0.0.1", 9, "t")
        attempts = 0

        async def exchange(_entity: object) -> object:
            nonlocal attempts
            attempts += 1
            loop_task.cancel()  # the stop arrives as the peer hangs up
            raise ConnectionResetError("closed by peer")

        monkeypatch.setattr(peer, "_exchange", exchange)

        async def fetch_loop() -> None:
            while True:
                try:
                    await peer.request(REQUEST, 1.0)
                except PeerError:
                    await asyncio.sleep(0.01)

        loop_task = asyncio.create_task(fetch_loop())
        done, _ = await asyncio.wait([loop_task], timeout=2)
        assert done and loop_task.cancelled() and attempts == 1

    asyncio.run(scenario())
