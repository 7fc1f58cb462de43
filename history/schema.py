"""The flattened history table: one row per micro-op element, the form the
Spark analyses scan. Column meanings are documented in docs/histories.md
and in :mod:`history.flatten`."""

from __future__ import annotations

import pyarrow as pa

FLAT_SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("time", pa.int64()),
        ("type", pa.string()),
        ("process", pa.string()),
        ("f", pa.string()),
        ("pair_index", pa.int64()),
        ("pair_time", pa.int64()),
        ("row", pa.int32()),
        ("mop_index", pa.int32()),
        ("mop", pa.string()),
        ("key", pa.int64()),
        ("offset", pa.int64()),
        ("value", pa.int64()),
        ("pos", pa.int32()),
        ("keys", pa.list_(pa.int64())),
        ("rebalance_keys", pa.list_(pa.int64())),
        ("error", pa.string()),
        ("payload", pa.string()),
        ("extra", pa.string()),
    ]
)

COLUMNS: tuple[str, ...] = tuple(FLAT_SCHEMA.names)
# The columns of one micro-op element (a row); the others describe its op.
ROW_COLUMNS = ("mop_index", "mop", "key", "offset", "value", "pos")

# An auxiliary column readers add (the source line of each row); pairing drops it.
LINE = "_line"
