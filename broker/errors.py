"""Kafka error codes from one registry (kio's generated ``ErrorCode``), and the
exception that carries one through the broker to the response."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """A failure that has a Kafka error code: handlers turn it into that code."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message or None
