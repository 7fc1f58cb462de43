"""A straightforward single-process pandas version of the checker's per-key
analyses, as the benchmark's yardstick (not part of jepka).

Same definitions as ``checkers.queue`` (version order, inconsistent offsets,
duplicates, lost writes, unseen, G1a, precommitted reads, internal and
per-process poll/send order); no cycle search.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

COLUMNS = [
    "index",
    "time",
    "type",
    "process",
    "f",
    "row",
    "mop_index",
    "mop",
    "key",
    "offset",
    "value",
    "pos",
    "keys",
    "rebalance_keys",
    "extra",
]


def _deltas(df: pd.DataFrame, by: list[str]) -> pd.Series:
    return df["idx"] - df.groupby(by, sort=False)["idx"].shift()


def check(path: str) -> dict[str, int]:
    t = pq.read_table(path, columns=COLUMNS).to_pandas()
    t = t[(t["process"] != "nemesis") & (t["type"] != "invoke")]
    ops = t[t["row"] == 0][["index", "type", "process", "f", "keys"]]
    m = t[t["mop"].notna() & t["key"].notna() & t["value"].notna()].copy()
    for c in ("key", "value"):
        m[c] = m[c].astype(np.int64)
    sends, reads = m[m["mop"] == "send"], m[m["mop"] == "poll"]
    ok_reads = reads[reads["type"] == "ok"][["key", "value"]].drop_duplicates()
    seen_info = sends[sends["type"] == "info"].merge(ok_reads, on=["key", "value"])["index"]
    committed = (sends["type"] == "ok") | sends["index"].isin(set(seen_info))
    sends = sends.assign(committed=committed)

    versions = (
        pd.concat([reads[["key", "offset", "value"]], sends[committed][["key", "offset", "value"]]])
        .dropna()
        .drop_duplicates()
    )
    versions["idx"] = versions.groupby("key")["offset"].rank(method="dense").astype(np.int64) - 1
    counts: dict[str, int] = {}
    per_offset = versions.groupby(["key", "offset"])["value"].nunique()
    counts["inconsistent-offsets"] = int((per_offset > 1).sum())
    vidx = (
        versions.groupby(["key", "value"])
        .agg(first=("idx", "min"), last=("idx", "max"), n=("offset", "nunique"))
        .reset_index()
    )
    counts["duplicate"] = int((vidx["n"] > 1).sum())

    ok_first = ok_reads.merge(vidx, on=["key", "value"])
    bound = ok_first.groupby("key")["first"].max().rename("bound").reset_index()
    cand = vidx.merge(bound, on="key")
    cand = cand[cand["last"] <= cand["bound"]].merge(
        ok_reads, on=["key", "value"], how="left", indicator=True
    )
    cand = cand[cand["_merge"] == "left_only"][["key", "value"]]
    writers = sends.drop_duplicates(["key", "value"])
    counts["lost-write"] = len(cand.merge(writers[writers["committed"]], on=["key", "value"]))
    ok_sends = sends[sends["type"] == "ok"][["key", "value"]]
    unseen = ok_sends.merge(ok_reads, on=["key", "value"], how="left", indicator=True)
    counts["unseen"] = int(unseen[unseen["_merge"] == "left_only"]["key"].nunique())
    heads = t[(t["row"] == 0) & (t["type"] == "info") & t["extra"].notna()]
    refused = {
        (i, m)
        for i, e in zip(heads["index"], heads["extra"], strict=True)
        for m in json.loads(e).get("refused", [])
    }
    pairs = zip(sends["index"], sends["mop_index"], strict=True)
    was_refused = np.array([p in refused for p in pairs], bool)
    failed = sends[(sends["type"] == "fail") | was_refused][["key", "value"]]
    counts["G1a"] = len(reads[reads["type"] == "ok"].merge(failed, on=["key", "value"]))
    counts["precommitted-read"] = len(
        reads.merge(sends[["index", "key", "value"]], on=["index", "key", "value"])
    )

    pos = m.merge(
        versions[["key", "offset", "idx"]].drop_duplicates(), on=["key", "offset"], how="left"
    )
    pos["idx"] = pos["idx"].fillna(
        pos[["key", "value"]].merge(vidx, on=["key", "value"], how="left")["first"]
    )
    pos = pos.sort_values(["index", "key", "mop_index", "pos"], kind="stable")
    for mop, skip, nonmono in (
        ("poll", "int-poll-skip", "int-nonmonotonic-poll"),
        ("send", "int-send-skip", "int-nonmonotonic-send"),
    ):
        rows = pos[pos["mop"] == mop]
        d = _deltas(rows, ["index", "key"])
        counts[skip], counts[nonmono] = int((d > 1).sum()), int((d < 1).sum())

    # per process and key, reset at each assign/subscribe
    ops = ops.sort_values("index")
    ops["seg"] = ops["f"].isin(["assign", "subscribe"]).groupby(ops["process"]).cumsum()
    polls = (
        pos[(pos["mop"] == "poll") & (pos["type"] == "ok")]
        .groupby(["index", "key", "process"], sort=False)["idx"]
        .agg(["first", "last"])
        .reset_index()
        .merge(ops[["index", "seg"]], on="index")
    )
    polls = polls.sort_values("index", kind="stable")
    prev_last = polls.groupby(["process", "seg", "key"], sort=False)["last"].shift()
    d = polls["first"] - prev_last
    counts["poll-skip"], counts["nonmonotonic-poll"] = int((d > 1).sum()), int((d < 1).sum())
    sent = (
        pos[(pos["mop"] == "send") & pos["type"].isin(["ok", "info"])]
        .groupby(["index", "key", "process"], sort=False)["idx"]
        .agg(["first", "last"])
        .reset_index()
        .sort_values("index", kind="stable")
    )
    d = sent["first"] - sent.groupby(["process", "key"], sort=False)["last"].shift()
    counts["nonmonotonic-send"] = int((d < 1).sum())
    return counts


if __name__ == "__main__":
    t0 = time.perf_counter()
    print(check(sys.argv[1]), f"{time.perf_counter() - t0:.1f} s")
