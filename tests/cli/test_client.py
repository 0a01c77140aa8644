"""The CLI's quick HTTP path (``agentdeck.client.quick``) against a real local server that plays a
daemon: event streams (chunked, dropped and resumed), error bodies, a dead daemon,
a hung daemon."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from agentdeck.cli import reads, remote_follow
from agentdeck.cli.wire import DaemonWire
from agentdeck.client import quick
from agentdeck.daemon.home import DaemonInfo
from agentdeck.errors import AgentdeckError, NotFound, UsageError

Reply = tuple[int, dict[str, str], list[bytes]]  # status, headers, body chunks


def sse(*frames: tuple[str | None, dict[str, object]]) -> list[bytes]:
    out = []
    for kind, data in frames:
        head = f"event: {kind}\n" if kind else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n".encode())
    return out


def event(i: int) -> dict[str, object]:
    return {"id": i, "agent_id": "a1", "type": "notice", "ts": 1.0, "data": {"n": i}}


class Played:
    """A daemon played by ``answer(method, path, query, headers, body) -> Reply``."""

    def __init__(self, answer: Callable[..., Reply]) -> None:
        self.requests: list[tuple[str, str, dict[str, list[str]], dict[str, str], bytes]] = []
        played = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                url = urlsplit(self.path)
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size) if size else b""
                query = parse_qs(url.query)
                headers = {k.lower(): v for k, v in self.headers.items()}
                played.requests.append((self.command, url.path, query, headers, body))
                status, extra, chunks = answer(self.command, url.path, query, headers, body)
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                if len(chunks) == 1:
                    self.send_header("Content-Length", str(len(chunks[0])))
                    self.end_headers()
                    self.wfile.write(chunks[0])
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def daemon(self) -> quick.Daemon:
        port = self.server.server_address[1]
        return quick.Daemon(DaemonInfo(pid=1, host="127.0.0.1", port=port, started_at=0.0), "tok")


Play = Callable[[Callable[..., Reply]], Played]


@pytest.fixture
def play() -> Iterator[Play]:
    servers: list[Played] = []

    def start(answer: Callable[..., Reply]) -> Played:
        played = Played(answer)
        played.thread.start()
        servers.append(played)
        return played

    yield start
    for played in servers:
        played.server.shutdown()
        played.server.server_close()


def test_a_dropped_stream_resumes_from_its_position_without_gaps(play: Play) -> None:
    def answer(method: str, path: str, query: dict[str, list[str]], *_: object) -> Reply:
        if query["after"] == ["0"]:
            chunks = sse(("notice", event(3)), ("dropped", {"position": 5}))
        else:
            chunks = sse(("notice", event(6)), ("notice", event(7)))
        return 200, {"Content-Type": "text/event-stream"}, chunks

    played = play(answer)
    got = [e["id"] for e in remote_follow.stream(played.daemon(), "a1", 0)]
    assert got == [3, 6, 7]
    assert [r[2]["after"] for r in played.requests] == [["0"], ["5"]]


def test_every_call_carries_the_token_and_says_it_is_the_cli(play: Play) -> None:
    played = play(lambda *_: (200, {}, [b'{"agents": []}']))
    d = played.daemon()
    assert d.get("/api/agents", [("state", "idle"), ("state", "done"), ("limit", 5)]) == {
        "agents": []
    }
    assert d.post("/api/asks/x y", {"answer": "é — ok"}) == {"agents": []}
    (_, path, query, headers, _), (_, path2, _, headers2, body2) = played.requests
    assert path == "/api/agents" and query == {"state": ["idle", "done"], "limit": ["5"]}
    assert headers["authorization"] == "Bearer tok" and headers["x-agentdeck-client"] == "cli"
    assert path2 == "/api/asks/x%20y"
    assert json.loads(body2) == {"answer": "é — ok"}
    assert headers2["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("status", "kind"), [(409, AgentdeckError), (404, NotFound), (422, UsageError)]
)
def test_error_bodies_become_clear_errors(play: Play, status: int, kind: type) -> None:
    body = {"error": {"status": status, "message": "agent x is done", "hint": "resume it"}}
    played = play(lambda *_: (status, {}, [json.dumps(body).encode()]))
    with pytest.raises(kind) as info:
        played.daemon().post("/api/agents/x/interrupt")
    assert info.value.message == "agent x is done" and info.value.hint == "resume it"


def test_an_error_without_our_shape_still_says_the_status(play: Play) -> None:
    played = play(lambda *_: (502, {}, [b"<html>bad gateway</html>"]))
    with pytest.raises(AgentdeckError, match="daemon answered 502"):
        played.daemon().get("/api/stats")


def test_a_dead_daemon_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # held, never listened on: connections are refused
        port = s.getsockname()[1]
        d = quick.Daemon(DaemonInfo(pid=1, host="127.0.0.1", port=port, started_at=0.0), "tok")
        with pytest.raises(AgentdeckError, match="did not answer") as info:
            d.get("/api/stats")
    assert info.value.hint and "agentdeck status" in info.value.hint


def test_a_hung_daemon_times_out_with_a_clear_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # accepts connections, never answers
        port = listener.getsockname()[1]
        d = quick.Daemon(DaemonInfo(pid=1, host="127.0.0.1", port=port, started_at=0.0), "tok")
        with pytest.raises(AgentdeckError, match="did not answer: timed out"):
            d.call("GET", "/api/stats", timeout=0.3)


def test_a_stream_the_daemon_ends_mid_chunk_ends_without_a_traceback(play: Play) -> None:
    def answer(*_: object) -> Reply:
        return 200, {"Content-Type": "text/event-stream"}, [*sse(("notice", event(1))), b"data: {"]

    played = play(answer)
    assert [e["id"] for e in remote_follow.stream(played.daemon(), "a1", 0)] == [1]


def test_logs_follow_of_an_agent_that_ends_while_its_log_is_read_returns(
    play: Play, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live when first asked, final by the time its log is read: the log has the end,
    so nothing is followed (a stream would wait for an end already printed)."""
    asked: list[str] = []

    def answer(method: str, path: str, query: dict[str, list[str]], *_: object) -> Reply:
        asked.append(path)
        if path in ("/api/agents/x", "/api/agents/a1"):  # by the name given, then by id
            state = "running" if path.endswith("/x") else "done"
            return 200, {}, [json.dumps({"id": "a1", "state": state}).encode()]
        if path == "/api/events":
            final = {**event(9), "type": "state_changed", "data": {"new": "done", "old": "running"}}
            events = [event(8), final] if query["after"] == ["0"] else []
            return 200, {}, [json.dumps({"events": events}).encode()]
        return 500, {}, [b'{"error": {"message": "no stream here"}}']

    played = play(answer)
    assert reads.logs(DaemonWire(played.daemon()), "x", follow=True, as_json=True) == 0
    assert "/api/events/stream" not in asked
    assert [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()] == [8, 9]


def test_a_404_names_what_was_not_found_as_the_daemon_says(play: Play) -> None:
    body = {"error": {"status": 404, "message": "no approval request with id 'r9'",
                      "hint": "`agentdeck approvals` lists the pending ones",
                      "kind": "approval request", "id": "r9"}}  # fmt: skip
    played = play(lambda *_: (404, {}, [json.dumps(body).encode()]))
    with pytest.raises(NotFound) as info:
        played.daemon().post("/api/approvals/r9", {"decision": "allow"})
    assert (info.value.kind, info.value.ident) == ("approval request", "r9")
    assert info.value.message == "no approval request with id 'r9'"
    assert info.value.hint == "`agentdeck approvals` lists the pending ones"


def test_a_404_without_a_name_names_the_path_asked_for(play: Play) -> None:
    body = {"error": {"status": 404, "message": "Not Found"}}  # a route the daemon lacks
    played = play(lambda *_: (404, {}, [json.dumps(body).encode()]))
    with pytest.raises(NotFound) as info:
        played.daemon().get("/api/nothing/here")
    assert (info.value.kind, info.value.ident) == ("resource", "/api/nothing/here")
    assert info.value.message == "Not Found"


def test_a_large_body_in_small_chunks_arrives_whole(play: Play) -> None:
    events = [{"id": i, "text": "é" * (i % 50)} for i in range(3000)]
    text = json.dumps({"events": events}).encode()
    chunks = [text[i : i + 997] for i in range(0, len(text), 997)]
    played = play(lambda *_: (200, {}, chunks))
    assert played.daemon().get("/api/events") == {"events": events}
    whole = play(lambda *_: (200, {}, [text]))  # one body, by Content-Length
    assert whole.daemon().get("/api/events") == {"events": events}
