"""The one exception coordinators raise: a Kafka error code for the client."""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class CoordinatorError(Exception):
    """An expected refusal, carried to the response as its Kafka error code."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code
