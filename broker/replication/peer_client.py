"""A minimal Kafka protocol client for broker-to-broker traffic (Raft messages and
controller requests): kio entities in, kio entities out, one request at a time per
connection, reconnecting on demand. A failed request raises ``PeerError``; callers
retry on their own schedule, as Kafka's inter-broker channels do. Responses pass the
frame guard before kio's native reader, which aborts the process on a count it
cannot allocate: whatever listens at a peer's address must not be able to kill us."""

from __future__ import annotations

import asyncio
import io
import struct
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import API_VERSIONS_KEY, response_type
from broker.protocol.frame_guard import check

SIZE = struct.Struct(">i")


class PeerError(Exception):
    """The peer could not be reached or answered with bytes we cannot read."""


def encode_request(entity: Any, correlation_id: int, client_id: str) -> bytes:
    flexible = type(entity).__flexible__
    header_type = RequestHeaderV2 if flexible else RequestHeaderV1
    header = header_type(
        request_api_key=type(entity).__api_key__,
        request_api_version=type(entity).__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    entity_writer(header_type)(buf, header)
    entity_writer(type(entity))(buf, entity)
    data = buf.getbuffer()
    SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


def decode_response(frame: bytes, request: Any) -> tuple[int, Any]:
    """``(correlation_id, response)`` for a response to ``request``."""
    cls = type(request)
    body_type = response_type(cls.__api_key__, cls.__version__)
    flexible = body_type.__flexible__ and cls.__api_key__ != API_VERSIONS_KEY  # always v0
    header_type = ResponseHeaderV1 if flexible else ResponseHeaderV0
    check(body_type, frame, check(header_type, frame))  # UnsafeFrame is a ValueError
    header, offset = entity_reader(header_type)(frame, 0)
    body, _ = entity_reader(body_type)(frame, offset)
    return header.correlation_id, body


class PeerConnection:
    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._lock = asyncio.Lock()
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._correlation = 0
        self.gone = False  # the last attempt found no process at the address

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def request(self, entity: Any, timeout: float) -> Any:
        """Sends ``entity`` and returns the peer's response; raises ``PeerError``."""
        async with self._lock:
            try:
                # a timeout scope, not wait_for: on 3.11 wait_for swallows a
                # cancellation that meets the exchange's end, and a fetcher loop
                # cancelled at shutdown then runs on and hangs the stop
                async with asyncio.timeout(timeout):
                    response = await self._exchange(entity)
            except (OSError, EOFError) as e:  # IncompleteReadError is an EOFError
                # refused, reset or closed by the peer's kernel: its process is
                # gone; a timeout (paused peer, dropped packets) says nothing
                self.gone = isinstance(e, ConnectionError | EOFError)
                self.close()
                raise PeerError(f"{self.host}:{self.port}: {type(e).__name__}: {e}") from None
            except (ValueError, struct.error) as e:  # undecodable bytes
                self.close()
                raise PeerError(f"{self.host}:{self.port}: bad response: {e}") from None
            self.gone = False
            return response

    async def _exchange(self, entity: Any) -> Any:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        self._correlation += 1
        writer.write(encode_request(entity, self._correlation, self.client_id))
        await writer.drain()
        (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
        correlation, response = decode_response(await reader.readexactly(size), entity)
        if correlation != self._correlation:
            raise ValueError(f"correlation id {correlation}, expected {self._correlation}")
        return response

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
