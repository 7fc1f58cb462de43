"""A long fuzz campaign against a real reference broker: no request may kill it.

Starts a broker, asks it for ApiVersions and builds valid seed frames for every
API and version it advertises (kio schemas filled with sample values that name
existing topics and partitions, ``broker.protocol.samples``). Each frame sent is a
seed mutated by byte flips, inserts, deletes and truncation, and structure-aware:
lengths and counts at every nesting level overwritten with huge, negative,
past-the-end or off-by-one values. Frames go out over ``--connections`` concurrent
connections; a watchdog checks that the process lives and answers ApiVersions. On
a crash or a hang the frames in flight and the last ones sent are saved under
``--out``, the broker is restarted and the campaign goes on. The broker runs under
an address-space limit (``--memory-limit-gb``), so an allocation that would only
succeed by overcommit, or exhaust a smaller machine, fails here too.

Bounded by ``--frames`` and ``--time-limit``. Prints frames sent, frames/s, the
APIs x versions covered, crashes and hangs with their saved inputs, whether the
broker ended alive and answering a produce, and the command that made the figures.
``--replay PATH...`` sends saved frames one at a time to a fresh broker instead.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import resource
import signal
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from broker.errors import ErrorCode
from broker.launcher import BrokerProcess
from broker.protocol.codec import build, request_type
from broker.protocol.samples import MAXIMUM, Sampler, Spot, request_frame, rewrite_length
from broker.replication.peer_client import decode_response, encode_request

SIZE = struct.Struct(">i")
TOPICS = {"fuzz": 3, "fuzz-compact": 2}  # name -> partitions; the compacted one runs the cleaner
STRINGS = (*TOPICS, "fuzz-group", "fuzz-txn", "consumer", "range", "")
SEEDS_PER_VERSION = 5  # one per codec: none, gzip, snappy, lz4, zstd
API_VERSIONS = {"client_software_name": "fuzz", "client_software_version": "1"}
INTERESTING = (b"\xff\xff\xff\xff\x0f", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff")
# written over an int in place (its low 2, 4 or 8 bytes): lengths stay, values go wild
EXTREMES = (0, 1, -1, 2**15 - 1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63))


def record_batch(compression: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, compression, False, -1, -1, -1, 1 << 20)
    for i in range(3):
        builder.append(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * 20, [])
    return bytes(builder.build())


def kio_versions(api_key: int) -> set[int]:
    name = api_key_map.get(api_key)
    if name is None:
        return set()
    return {v for v, kinds in schema_name_map[name].items() if EntityType.request in kinds}


@dataclass(frozen=True)
class Seed:
    api_key: int
    version: int
    frame: bytes
    spots: list[Spot]


def build_seeds(advertised: list[tuple[int, int, int]], seed: int) -> list[Seed]:
    seeds = []
    for api_key, low, high in advertised:
        for version in sorted(set(range(low, high + 1)) & kio_versions(api_key)):
            for i in range(SEEDS_PER_VERSION):
                rng = random.Random(f"{seed}/{api_key}/{version}/{i}")
                sampler = Sampler(rng, strings=STRINGS, records=record_batch(i % 5))
                frame, spots = request_frame(sampler, api_key, version, correlation_id=i)
                seeds.append(Seed(api_key, version, frame, spots))
    return seeds


def length_value(rng: random.Random, spot: Spot) -> Any:
    """A new value for the length or count at ``spot``: (old, bytes left) -> value."""
    biggest = MAXIMUM[spot[1]]
    return rng.choice(
        (
            lambda old, left: biggest,
            lambda old, left: 2**32 - 1,  # a -1 read as unsigned
            lambda old, left: -1,
            lambda old, left: -2,
            lambda old, left: -(2**31),
            lambda old, left: left + 1,
            lambda old, left: left + 2,
            lambda old, left: 0,
            lambda old, left: old + 1,
            lambda old, left: old - 1,
            lambda old, left: rng.randrange(2**32),
        )
    )


def mutate(rng: random.Random, seed: Seed) -> bytes:
    """``seed``'s frame with 1-2 length rewrites and/or 1-4 byte-level mutations;
    byte mutations mostly spare the api key and version, so most frames get decoded."""
    frame = seed.frame
    roll = rng.random()
    if roll < 0.05:
        return frame
    if roll < 0.55 and seed.spots:
        # back to front, so rewriting a varint's width leaves earlier spots in place
        for spot in sorted(rng.sample(seed.spots, min(2, len(seed.spots))), reverse=True):
            frame = rewrite_length(frame, spot, length_value(rng, spot))
        if rng.random() < 0.5:
            return frame
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        start = 0 if rng.random() < 0.1 else min(4, len(data))
        at = rng.randint(start, max(len(data), start))
        action = rng.randrange(6)
        if action == 0 and at < len(data):
            data[at] ^= rng.randint(1, 255)
        elif action == 5:
            width = rng.choice((2, 4, 8))
            data[at : at + width] = (rng.choice(EXTREMES) % 2**64).to_bytes(8, "big")[-width:]
        elif action == 1:
            data[at:at] = rng.randbytes(rng.randint(1, 16))
        elif action == 2:
            data[at:at] = rng.choice(INTERESTING)
        elif action == 3:
            del data[at : at + rng.randint(1, 16)]
        else:
            del data[at:]
    return bytes(data)


@dataclass
class Campaign:
    broker: BrokerProcess
    seeds: list[Seed]
    out: Path
    args: argparse.Namespace
    sent: int = 0
    answered: int = 0
    closed: int = 0
    timed_out: int = 0
    covered: set[tuple[int, int]] = field(default_factory=set)
    crashes: list[Path] = field(default_factory=list)
    hangs: list[Path] = field(default_factory=list)
    recent: collections.deque[tuple[int, int, bytes]] = field(
        default_factory=lambda: collections.deque(maxlen=256)
    )
    in_flight: dict[int, tuple[int, int, bytes]] = field(default_factory=dict)
    running: asyncio.Event = field(default_factory=asyncio.Event)
    done: bool = False

    @property
    def host_port(self) -> tuple[str, int]:
        return "127.0.0.1", self.broker.port

    async def worker(self, number: int, deadline: float) -> None:
        rng = random.Random(f"{self.args.seed}/worker/{number}")
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while not self.done:
            if self.sent >= self.args.frames or time.monotonic() > deadline:
                self.done = True
                break
            await self.running.wait()
            seed = rng.choice(self.seeds)
            frame = mutate(rng, seed)
            self.sent += 1
            self.covered.add((seed.api_key, seed.version))
            entry = (seed.api_key, seed.version, frame)
            self.recent.append(entry)
            self.in_flight[number] = entry
            try:
                if streams is None:
                    streams = await asyncio.open_connection(*self.host_port)
                reader, writer = streams
                prefix = SIZE.pack(len(frame))
                if rng.random() < 0.01:  # now and then a size that disagrees with the frame
                    prefix = SIZE.pack(rng.choice((len(frame) + 7, max(len(frame) - 3, 0), -1)))
                writer.write(prefix + frame)
                await writer.drain()
                async with asyncio.timeout(self.args.reply_timeout):
                    (size,) = SIZE.unpack(await reader.readexactly(4))
                    await reader.readexactly(size)
                self.answered += 1
            except (TimeoutError, OSError, EOFError) as e:
                if isinstance(e, TimeoutError):
                    self.timed_out += 1
                else:
                    self.closed += 1
                if streams is not None:
                    streams[1].close()
                streams = None
            finally:
                self.in_flight.pop(number, None)
        if streams is not None:
            streams[1].close()

    async def request(self, entity: Any, timeout: float) -> Any:
        reader, writer = await asyncio.open_connection(*self.host_port)
        try:
            async with asyncio.timeout(timeout):
                writer.write(encode_request(entity, 1, "fuzz-watchdog"))
                await writer.drain()
                (size,) = SIZE.unpack(await reader.readexactly(4))
                return decode_response(await reader.readexactly(size), entity)[1]
        finally:
            writer.close()

    async def answers(self) -> bool:
        """The broker answers ApiVersions and (re)creates the seed topics, which a
        fuzzed DeleteTopics may have deleted."""
        api_versions = build(request_type(18, 3), API_VERSIONS)
        topics = [
            {
                "name": name,
                "num_partitions": n,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": "cleanup.policy", "value": "compact"}] * name.endswith("t"),
            }
            for name, n in TOPICS.items()
        ]
        create = build(
            request_type(19, 5), {"topics": topics, "timeout": 10_000, "validate_only": False}
        )
        try:
            response = await self.request(api_versions, self.args.hang_timeout)
            await self.request(create, self.args.hang_timeout)
        except (TimeoutError, OSError, EOFError, ValueError):
            return False
        return response.error_code == ErrorCode.none

    async def watchdog(self) -> None:
        last_check = time.monotonic()
        while not self.done:
            await asyncio.sleep(0.2)
            due = time.monotonic() - last_check > self.args.check_every
            if self.broker.alive() and not due:
                continue
            if (not self.broker.alive() or not await self.answers()) and not self.done:
                await self.recover()
            last_check = time.monotonic()

    async def recover(self) -> None:
        """Saves the findings and restarts the broker, the campaign paused meanwhile."""
        self.running.clear()
        self.save_findings()
        await asyncio.to_thread(self.broker.start)
        await self.answers()
        self.running.set()

    def save_findings(self) -> None:
        """Saves what was in flight and the last frames sent. A process that had to be
        killed hung; one that exited by itself crashed."""
        self.broker.kill()
        code = self.broker.proc.returncode if self.broker.proc else None
        kind, found = ("hang", self.hangs) if code == -signal.SIGKILL else ("crash", self.crashes)
        where = self.out / f"{kind}-{len(found) + 1}"
        where.mkdir(parents=True)
        frames = list(self.recent) + [e for e in self.in_flight.values() if e not in self.recent]
        for i, (api_key, version, frame) in enumerate(frames):
            (where / f"{i:03d}-api{api_key}-v{version}.bin").write_bytes(frame)
        tail = self.broker.stderr_path.read_text(errors="replace")[-4000:]
        (where / "broker-stderr.txt").write_text(f"exit code {code}\n{tail}")
        found.append(where)
        print(f"{kind}: exit code {code}, {len(frames)} frames saved in {where}", flush=True)

    async def produce_answered(self) -> bool:
        """A normal Produce v9 of one batch is acknowledged without error."""
        data = {
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [
                {"name": "fuzz", "partition_data": [{"index": 0, "records": record_batch(0)}]}
            ],
        }
        response = await self.request(build(request_type(0, 9), data), self.args.hang_timeout)
        return response.responses[0].partition_responses[0].error_code == ErrorCode.none

    async def run(self) -> bool:
        """Sends until the frame or time limit; True when nothing crashed or hung
        the broker and it still answers."""
        deadline = time.monotonic() + self.args.time_limit
        self.running.set()
        watchdog = asyncio.create_task(self.watchdog())
        started = time.monotonic()
        last_report = started
        workers = [
            asyncio.create_task(self.worker(i, deadline)) for i in range(self.args.connections)
        ]
        while not all(w.done() for w in workers):
            await asyncio.sleep(1)
            if watchdog.done() and not self.done:  # a restart failed
                for w in workers:
                    w.cancel()
                raise SystemExit(f"the broker did not restart: {watchdog.exception()!r}")
            if time.monotonic() - last_report >= self.args.report_every:
                last_report = time.monotonic()
                rate = self.sent / (last_report - started)
                print(f"{self.sent} frames, {rate:.0f}/s, crashes {len(self.crashes)}, "
                      f"hangs {len(self.hangs)}", flush=True)  # fmt: skip
        await asyncio.gather(*workers)
        self.done = True
        await watchdog
        elapsed = time.monotonic() - started
        await asyncio.sleep(1)  # the last frames' effect
        if not self.broker.alive():
            self.save_findings()
        alive = self.broker.alive() and await self.answers() and await self.produce_answered()
        summary = {
            "frames": self.sent,
            "seconds": round(elapsed, 1),
            "frames_per_second": round(self.sent / elapsed),
            "answered": self.answered,
            "closed": self.closed,
            "timed_out": self.timed_out,
            "apis": len({k for k, _ in self.covered}),
            "api_versions": len(self.covered),
            "seed_api_versions": len({(s.api_key, s.version) for s in self.seeds}),
            "crashes": [str(p) for p in self.crashes],
            "hangs": [str(p) for p in self.hangs],
            "alive_and_answering": alive,
            "logged_exceptions": dict(tracebacks(self.broker.data_dir / "broker.log")),
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2))
        print(
            f"frames sent: {self.sent} in {elapsed:.0f} s ({summary['frames_per_second']}/s); "
            f"answered {self.answered}, closed {self.closed}, timed out {self.timed_out}\n"
            f"APIs x versions covered: {len(self.covered)} "
            f"({summary['apis']} APIs, of {summary['seed_api_versions']} advertised with a "
            f"kio schema)\n"
            f"crashes: {len(self.crashes)}, hangs: {len(self.hangs)}"
            f"{f' (frames saved under {self.out})' if self.crashes or self.hangs else ''}\n"
            f"broker alive and answering (ApiVersions, Produce): {alive}\n"
            f"exceptions the broker logged (and survived): {summary['logged_exceptions']}"
        )
        return alive and not self.crashes and not self.hangs


def tracebacks(log: Path) -> collections.Counter[str]:
    """The broker's logged exceptions (not crashes: handler bugs the fuzzing found),
    by their last line."""
    found: collections.Counter[str] = collections.Counter()
    block: list[str] = []
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        if line.startswith("Traceback"):
            block = [line]
        elif block and line[:4].isdigit():  # the next log record
            found[block[-1][:160]] += 1
            block = []
        elif block:
            block.append(line)
    if block:
        found[block[-1][:160]] += 1
    return found


async def advertised(host: str, port: int) -> list[tuple[int, int, int]]:
    entity = build(request_type(18, 3), API_VERSIONS)
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(encode_request(entity, 1, "fuzz"))
    (size,) = SIZE.unpack(await reader.readexactly(4))
    response = decode_response(await reader.readexactly(size), entity)[1]
    writer.close()
    return [(int(a.api_key), int(a.min_version), int(a.max_version)) for a in response.api_keys]


async def replay(broker: BrokerProcess, paths: list[Path]) -> None:
    """Sends each saved frame on its own connection; reports the first that kills."""
    files = sorted(f for p in paths for f in (p.glob("*.bin") if p.is_dir() else [p]))
    for path in files:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        frame = path.read_bytes()
        writer.write(SIZE.pack(len(frame)) + frame)
        try:
            async with asyncio.timeout(2):
                await reader.read()
        except (TimeoutError, OSError):
            pass
        writer.close()
        await asyncio.sleep(0.2)
        if not broker.alive():
            print(f"{path} killed the broker; its stderr: {broker.stderr_path}")
            return
    print(f"the broker survived all {len(files)} frames")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--time-limit", type=float, default=3600, help="seconds")
    parser.add_argument("--connections", type=int, default=48)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reply-timeout", type=float, default=0.5, help="seconds")
    parser.add_argument("--check-every", type=float, default=2, help="seconds")
    parser.add_argument("--hang-timeout", type=float, default=20, help="seconds")
    parser.add_argument("--report-every", type=float, default=60, help="seconds")
    parser.add_argument("--memory-limit-gb", type=float, default=4)
    parser.add_argument("--out", type=Path, default=Path("bench/out/fuzz"))
    parser.add_argument("--replay", type=Path, nargs="+")
    args = parser.parse_args()
    limit = int(args.memory_limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # inherited by the broker
    with tempfile.TemporaryDirectory(prefix="fuzz-broker-") as tmp:
        broker = BrokerProcess(Path(tmp) / "node1").start()
        try:
            if args.replay:
                asyncio.run(replay(broker, args.replay))
                return
            args.out.mkdir(parents=True, exist_ok=True)
            out = Path(tempfile.mkdtemp(prefix="run-", dir=args.out))
            seeds = build_seeds(asyncio.run(advertised("127.0.0.1", broker.port)), args.seed)
            print(f"{len(seeds)} seed frames; findings go to {out}", flush=True)

            async def go() -> bool:
                return await Campaign(broker, seeds, out, args).run()

            survived = asyncio.run(go())
        finally:
            broker.kill()
    print(f"command: .venv/bin/python bench/fuzz_broker.py {' '.join(sys.argv[1:])}")
    if not survived:
        sys.exit(1)


if __name__ == "__main__":
    main()
