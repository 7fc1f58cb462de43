"""The API registry: which handler answers which API key, at which versions.

Each handler module in ``broker.api`` registers itself with ``@api(key, min,
max)``; ``load_handlers`` imports every module of the package, so a new API
family is added by adding a module, without touching dispatch. ApiVersions
advertises exactly what is registered here.

A handler is ``async def handle(ctx: RequestContext, request) -> dict | None``:
it gets the kio request for the negotiated version and returns the response
as plain data (``broker.protocol.codec.build`` fits it to the version), or
``None`` for no response (acks=0 produce).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.protocol.codec import build, response_type

if TYPE_CHECKING:
    from broker.broker import Broker

Handler = Callable[["RequestContext", Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiSpec:
    api_key: int
    min_version: int
    max_version: int
    handle: Handler


HANDLERS: dict[int, ApiSpec] = {}


def api(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Registers a handler for ``api_key`` at versions ``min_version..max_version``."""

    def register(handle: Handler) -> Handler:
        if api_key in HANDLERS and HANDLERS[api_key].handle is not handle:
            raise RuntimeError(f"API key {api_key} registered twice")
        HANDLERS[api_key] = ApiSpec(api_key, min_version, max_version, handle)
        return handle

    return register


def load_handlers() -> dict[int, ApiSpec]:
    """Imports every module of ``broker.api`` so their handlers register."""
    import broker.api as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "registry":
            importlib.import_module(f"broker.api.{module.name}")
    return HANDLERS


@dataclass
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str

    def entity(self, name: str, data: dict[str, Any]) -> Any:
        """A nested response entity of this version, by its kio class name."""
        module = importlib.import_module(response_type(self.api_key, self.api_version).__module__)
        return build(getattr(module, name), data)
