"""``jepka serve``: serves the store on localhost with an index of runs.

``/`` lists every run (name, time, verdict, anomaly counts); any other path
is a file of the store. A run without ``report.html`` gets one rendered on
first request. Binds 127.0.0.1 only: the store holds test data, not a site.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from harness.cli import UsageError, describe

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve store/ on localhost with an index of runs",
        description=describe(__doc__),
    )
    p.add_argument(
        "--store", type=Path, default=Path("store"), help="store folder (default: store)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=8080,
        help="port on 127.0.0.1 (default 8080; 0 picks a free one)",
    )
    p.set_defaults(run=run)


class StoreHandler(http.server.SimpleHTTPRequestHandler):
    """Static files of the store, plus the generated index and on-demand reports."""

    store: Path

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        if path in ("/", "/index.html"):
            self._index()
            return
        if path.endswith("/report.html"):
            self._ensure_report(path)
        super().do_GET()

    def _index(self) -> None:
        from reports.render import render_index
        from reports.site import list_runs, list_suites

        body = render_index(
            list_runs(self.store), list_suites(self.store), str(self.store)
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _ensure_report(self, path: str) -> None:
        from reports import RunError, write_report

        run_dir = Path(self.translate_path(path)).parent
        if (run_dir / "report.html").exists() or not (run_dir / "results.json").is_file():
            return
        try:
            write_report(run_dir)
        except RunError as e:
            log.warning("cannot render %s: %s", run_dir, e)

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s " + format, self.address_string(), *args)


def run(args: argparse.Namespace) -> int:
    store: Path = args.store
    if not store.is_dir():
        raise UsageError(f"{store}: no such store folder")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port number")
    handler = type("Handler", (StoreHandler,), {"store": store.resolve()})
    factory = functools.partial(handler, directory=str(store.resolve()))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), factory)
    except OSError as e:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}") from e
    with server:
        print(f"serving {store} at http://127.0.0.1:{server.server_address[1]}/", flush=True)
        server.serve_forever()
    return 0
