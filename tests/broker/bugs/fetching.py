"""A raw Fetch (v12) of one partition, so tests see exactly the bytes served."""

from __future__ import annotations

from typing import Any

from tests.broker.wire import WireClient


def fetch(client: WireClient, topic: str, offset: int = 0, read_committed: bool = False) -> Any:
    """Returns the partition response of a fetch of ``topic``-0 from ``offset``."""
    response = client.request(
        1,
        12,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": int(read_committed),
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    return response.responses[0].partitions[0]
