"""Real HTTP servers for notification tests: one that records what it is sent and
answers as scripted, and one that accepts connections and never answers."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """``statuses``: the answers to the first requests, in order; later ones get ``then``."""

    def __init__(self, statuses: tuple[int, ...] = (), then: int = 200, body: bytes = b"") -> None:
        self.statuses = list(statuses)
        self.then = then
        self.body = body  # of every answer (as JSON)
        self.received: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(Received(self.path, dict(self.headers), body))
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.then
                self.send_response(status)
                if receiver.body:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(receiver.body)))
                self.end_headers()
                self.wfile.write(receiver.body)

            do_GET = do_POST

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [r.body for r in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hung:
    """Listens, so a connection is made, but never reads or answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def close(self) -> None:
        self.sock.close()
