"""A minimal DevTools-protocol driver for headless Chromium, for the browser tests.

Launches the system ``chromium`` (no downloaded browser) with a fresh profile
and a debugging port chosen by the browser itself, and records every console
error and uncaught exception the page produces.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

from tests.eventually import eventually

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
)
TIMEOUT = 60.0


class Chromium:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="jepka-chromium-"))
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.errors: list[str] = []
        self._id = 0
        try:
            port = self._port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                page = next(t for t in json.load(r) if t["type"] == "page")
            self.ws = websocket.create_connection(
                page["webSocketDebuggerUrl"], timeout=TIMEOUT, suppress_origin=True
            )
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self) -> int:
        marker = self.profile / "DevToolsActivePort"

        def written() -> int | None:
            if marker.is_file() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            return None

        return eventually(written, TIMEOUT, what="chromium did not open its debugging port")

    def _event(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(d.get("exception", {}).get("description") or d.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append(
                " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
            )
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append(p["entry"].get("text", ""))

    def _recv_until(self, want: Any) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self._event(msg)
            if want(msg):
                return msg
        raise TimeoutError("no answer from chromium")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        mid = self._id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        msg = self._recv_until(lambda m: m.get("id") == mid)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self._recv_until(lambda m: m.get("method") == "Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def screenshot(self, path: Path, selector: str | None = None) -> Path:
        """The whole page, or only the element ``selector`` finds."""
        clip = {}
        if selector is not None:
            box = self.eval(
                f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                ".getBoundingClientRect(); return {x: r.left + scrollX, y: r.top + scrollY,"
                " width: r.width, height: r.height, scale: 1}; })()"
            )
            clip = {"clip": box}
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, **clip)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
