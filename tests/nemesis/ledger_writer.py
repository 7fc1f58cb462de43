"""A small writer keeping the broker's fsync-ledger format, for testing
`lose-unfsynced` with a known unsynced tail: it appends 100-byte chunks to a
few files, fsyncs (and records `<path> <size>` in `fsync.ledger`) only every
other chunk, never syncs `never.log`, and listens on a port so the harness
sees it as ready. It never calls `time.sleep`: under libfaketime (every node
daemon runs under it) clock_nanosleep intermittently fails with EINVAL; the
fsyncs pace the writes. Usage: ledger_writer.py DATA_DIR HOST PORT"""

from __future__ import annotations

import os
import socket
import sys
import threading


def main() -> None:
    data, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(os.path.join(data, "seg"), exist_ok=True)
    ledger = os.open(os.path.join(data, "fsync.ledger"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    files = {
        name: os.open(os.path.join(data, name), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        for name in ("seg/a.log", "b.log", "never.log")
    }
    server = socket.create_server((host, port))
    threading.Thread(
        target=lambda: [server.accept()[0].close() for _ in iter(int, 1)], daemon=True
    ).start()
    for i in range(3000):
        for name, fd in files.items():
            os.write(fd, (f"{name}:{i}:".encode() * 20)[:100])
            if name != "never.log" and i % 2 == 0:
                os.fsync(fd)
                os.write(ledger, f"{name} {os.fstat(fd).st_size}\n".encode())
    threading.Event().wait()


if __name__ == "__main__":
    main()
