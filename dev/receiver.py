"""A local OpenLineage receiver: appends every event POSTed to it (any path) as one JSON line to a file.

    python dev/receiver.py --port 5000 --out events.jsonl

What the Celery variant of ``./dev.sh up`` sends the lineage events to over HTTP (``OPENLINEAGE_URL``), so
that events from every worker land in one place. Listens on 127.0.0.1 only; answers 200 to a JSON body,
400 otherwise. Never evaluates what it receives.
"""
from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_lock = threading.Lock()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                event = json.loads(body)
            except ValueError:
                self.send_response(400)
                self.end_headers()
                return
            with _lock, args.out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(event, separators=(",", ":")) + "\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
