"""ApiVersions: advertises exactly the version ranges of the API table."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode


async def handle_api_versions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "api_keys": ctx.broker.api_versions,
        "throttle_time": 0,
    }
