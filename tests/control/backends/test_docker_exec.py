"""An exec's output as the docker backend reads it, against a stand-in engine
that answers on a Unix socket: the case a loaded machine makes, where the
command's output arrives in the same read as the response headers."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

from control.backends.docker import DockerError, engine, exec_in


def frame(kind: int, data: bytes) -> bytes:
    return bytes([kind, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


#: what the stand-in engine's command prints, in three frames
FRAMES = frame(1, b"first\n") + frame(2, b"oops\n") + frame(1, b"second\n")


def read_request(conn: socket.socket) -> str:
    """The request line of one HTTP request, its body read and dropped."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    length = next(
        (
            int(v)
            for k, _, v in (h.partition(": ") for h in lines[1:])
            if k.lower() == "content-length"
        ),
        0,
    )
    while len(body) < length:
        body += conn.recv(4096)
    return lines[0]


def reply(status: str, payload: object) -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


def answer(request: str) -> bytes:
    """The stand-in engine: exec `e1` in container `c1` prints FRAMES and
    exits 3; exec `e2` in container `stopped` cannot start."""
    method, path, _ = request.split(" ")
    if method == "POST" and path.endswith("/containers/c1/exec"):
        return reply("201 Created", {"Id": "e1"})
    if method == "POST" and path.endswith("/containers/stopped/exec"):
        return reply("201 Created", {"Id": "e2"})
    if method == "POST" and path.endswith("/exec/e2/start"):
        return reply("409 Conflict", {"message": "Container stopped is not running"})
    if method == "POST" and path.endswith("/exec/e1/start"):
        # the headers and every frame in one write, as one read gets them
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n" + FRAMES
        )
    if method == "GET" and path.endswith("/exec/e1/json"):
        return reply("200 OK", {"Running": False, "ExitCode": 3})
    return reply("500 Internal Server Error", {"message": f"unexpected {request}"})


@pytest.fixture
def engine_client(tmp_path: Path) -> Iterator[docker.DockerClient]:
    """A client of the stand-in engine, which answers one request per
    connection until the test ends."""
    path = str(tmp_path / "engine.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            with conn:
                conn.sendall(answer(read_request(conn)))

    threading.Thread(target=serve, daemon=True).start()
    client = docker.DockerClient(base_url=f"unix://{path}", version="1.41")
    try:
        yield client
    finally:
        client.close()
        server.close()


def test_output_arriving_with_the_headers_is_kept(engine_client: docker.DockerClient) -> None:
    result = exec_in(Container({"Id": "c1"}, client=engine_client), ["sh", "-c", "x"])
    assert (result.exit, result.out, result.err) == (3, "first\nsecond\n", "oops\n")


def test_an_exec_the_engine_refuses_says_why(engine_client: docker.DockerClient) -> None:
    stopped = Container({"Id": "stopped"}, client=engine_client)
    refused = r"^exec in n1: Container stopped is not running$"
    with pytest.raises(DockerError, match=refused), engine("exec in n1"):
        exec_in(stopped, ["true"])
