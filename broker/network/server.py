"""The socket server: one asyncio task per connection.

Like Kafka's network layer, each connection has one request in process at a
time and responses go out in request order; the socket is not read while a
request is being handled, so a fast client is slowed by TCP back-pressure
instead of growing the broker's memory. Frames larger than
``socket.request.max.bytes`` or that cannot be parsed close the connection
(logged), and so are connections idle for ``connections.max.idle.ms``;
unsupported API versions are answered by ApiVersions with
UNSUPPORTED_VERSION and otherwise close the connection, as Kafka does.

The server is handed what it serves: the API table, the broker context its
handlers get, and the metrics it records into.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Mapping

from broker.api.context import BrokerContext, RequestContext
from broker.api.table import ApiSpec
from broker.errors import ErrorCode, KafkaError
from broker.network.metrics import RequestMetrics
from broker.protocol.codec import (
    API_VERSIONS_KEY,
    DecodeError,
    build_response,
    decode_request,
    encode_response,
    peek_header,
)

log = logging.getLogger(__name__)
SIZE = struct.Struct(">i")


class ConnectionClosed(Exception):
    pass


class Connection:
    def __init__(
        self, server: SocketServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.config = server.context.config
        self.apis = server.apis
        self.context = server.context
        self.metrics = server.metrics
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"

    async def serve(self) -> None:
        try:
            while True:
                frame = await self._read_frame()
                response = await self._handle(frame)
                if response is not None:
                    self.writer.write(response)
                    await self.writer.drain()
        except (ConnectionClosed, asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection %s: unexpected error; closing", self.peer)
        finally:
            self.writer.close()

    async def _read_frame(self) -> bytes:
        idle_ms = self.config["connections.max.idle.ms"]
        try:
            async with asyncio.timeout(idle_ms / 1000):
                prefix = await self.reader.readexactly(SIZE.size)
        except TimeoutError:
            log.info("connection %s: idle for %d ms; closing", self.peer, idle_ms)
            raise ConnectionClosed from None
        (size,) = SIZE.unpack(prefix)
        limit = self.config["socket.request.max.bytes"]
        if size < 0 or size > limit:
            log.warning(
                "connection %s: frame of %d bytes outside [0, %d]; closing", self.peer, size, limit
            )
            raise ConnectionClosed
        return await self.reader.readexactly(size)

    async def _handle(self, frame: bytes) -> bytes | None:
        try:
            api_key, version, correlation_id = peek_header(frame)
        except DecodeError as e:
            log.warning("connection %s: %s; closing", self.peer, e)
            raise ConnectionClosed from None
        spec = self.apis.get(api_key)
        if spec is None or not spec.min_version <= version <= spec.max_version:
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(correlation_id)
            log.warning(
                "connection %s: unsupported API %d v%d; closing", self.peer, api_key, version
            )
            raise ConnectionClosed
        try:
            client_id, request = decode_request(frame, api_key, version)
        except DecodeError as e:
            log.warning("connection %s: %s; closing", self.peer, e)
            raise ConnectionClosed from None
        ctx = RequestContext(
            self.context, api_key, version, correlation_id, client_id, self.peer.rsplit(":", 1)[0]
        )
        started = time.perf_counter()
        try:
            data = await spec.handle(ctx, request)
        except KafkaError as e:
            log.warning(
                "connection %s: API %d v%d refused: %s; closing", self.peer, api_key, version, e
            )
            raise ConnectionClosed from None
        response = (
            None
            if data is None
            else encode_response(api_key, correlation_id, build_response(api_key, version, data))
        )
        self.metrics.record(api_key, time.perf_counter() - started)
        return response

    def _unsupported_api_versions(self, correlation_id: int) -> bytes:
        """ApiVersions v0 with UNSUPPORTED_VERSION and our ranges, so the client retries."""
        data = {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": self.context.api_versions,
            "throttle_time": 0,
        }
        return encode_response(
            API_VERSIONS_KEY, correlation_id, build_response(API_VERSIONS_KEY, 0, data)
        )


class SocketServer:
    def __init__(
        self, apis: Mapping[int, ApiSpec], context: BrokerContext, metrics: RequestMetrics
    ) -> None:
        self.apis = apis
        self.context = context
        self.metrics = metrics
        self.server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Listens; returns the bound port (useful with port 0)."""
        self.server = await asyncio.start_server(self._accept, host or None, port, limit=1 << 16)
        return self.server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await Connection(self, reader, writer).serve()
        except asyncio.CancelledError:
            pass  # stopped by stop(); ending quietly spares 3.11's stream callback an error
        finally:
            self._connections.discard(task)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
