"""The controller listener of one node (the address in ``controller.quorum.voters``):
Raft traffic between voters and the controller APIs brokers call. It serves a fixed
set of APIs, at the versions ``broker.raft.wire`` and ``controller_apis`` send (a
handler answers with the entity type of its request's version); any other request
or undecodable frame closes the connection, logged."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from broker.protocol.codec import DecodeError, decode_request, encode_response, peek_header
from broker.raft.wire import WireError

log = logging.getLogger(__name__)
SIZE = struct.Struct(">i")
MAX_FRAME = 100 * 1024 * 1024

Handler = Callable[[Any], Awaitable[Any]]
BROKER_HEARTBEAT = 63


class ControllerListener:
    def __init__(
        self, handlers: dict[int, Handler], on_disconnect: Callable[[int], None] | None = None
    ) -> None:
        """``handlers`` maps an API key to a coroutine returning the response;
        ``on_disconnect(broker_id)`` is told when a connection that carried that
        broker's heartbeats is closed by its peer."""
        self.handlers = handlers
        self.on_disconnect = on_disconnect
        self.server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(self._accept, host or None, port)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        heartbeats_from: set[int] = set()
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
                if not 0 <= size <= MAX_FRAME:
                    log.warning("controller connection %s: frame of %d bytes", peer, size)
                    return
                response = await self._handle(await reader.readexactly(size), heartbeats_from)
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            for broker_id in heartbeats_from if self.on_disconnect else ():
                self.on_disconnect(broker_id)
        except (DecodeError, WireError, LookupError) as e:
            log.warning("controller connection %s: %s; closing", peer, e)
        except Exception:
            log.exception("controller connection %s: unexpected error; closing", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, frame: bytes, heartbeats_from: set[int]) -> bytes:
        api_key, version, correlation_id = peek_header(frame)
        handler = self.handlers.get(api_key)
        if handler is None:
            raise LookupError(f"API {api_key} v{version} is not served here")
        _client, request = decode_request(frame, api_key, version)
        if api_key == BROKER_HEARTBEAT:
            heartbeats_from.add(int(request.broker_id))
        return encode_response(api_key, correlation_id, await handler(request))
