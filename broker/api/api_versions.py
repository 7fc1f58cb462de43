"""ApiVersions: advertises exactly the API ranges registered with the registry."""

from __future__ import annotations

from typing import Any

from broker.api.registry import RequestContext, api
from broker.errors import ErrorCode


@api(18, 0, 3)
async def handle_api_versions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "api_keys": ctx.broker.api_version_entries(),
        "throttle_time": 0,
    }
