"""Escape attempts from inside a sandbox: ``python probe.py CONFIG.json``.

Each attempt is run and reported on its own (``{"name": "ok: …" | "refused: …"}``,
one JSON object on stdout), so a test asserts every case individually. The
config says where things are: the workspace, a place outside it, planted
secrets, servers to reach.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path


def attempt(fn: Callable[[], object]) -> str:
    try:
        return f"ok: {str(fn())[:200]}"
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        return f"refused: {type(exc).__name__}: {str(exc)[:200]}"


def write(path: str) -> Callable[[], object]:
    def go() -> object:
        Path(path).write_text("escaped")
        return path

    return go


def read(path: str) -> Callable[[], object]:
    return lambda: Path(path).read_text()[:60]


def http(url: str, *, proxy: bool = True) -> Callable[[], object]:
    def go() -> object:
        handler = urllib.request.ProxyHandler() if proxy else urllib.request.ProxyHandler({})
        opener = urllib.request.build_opener(handler)
        with opener.open(url, timeout=5) as response:
            return f"{response.status} {response.read(60)!r}"

    return go


def connect(host: str, port: int) -> Callable[[], object]:
    def go() -> object:
        with socket.create_connection((host, port), timeout=3):
            return f"connected to {host}:{port}"

    return go


def model(url: str | None) -> Callable[[], object]:
    """The model endpoint answers (any HTTP status is an answer); without a
    URL, the one the agent is given (``ANTHROPIC_BASE_URL``)."""

    def go() -> object:
        target = url or os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/models"
        try:
            return http(target, proxy=False)()
        except urllib.error.HTTPError as exc:
            return f"{exc.code} from the model endpoint"

    return go


def via_proxy(request: str) -> Callable[[], object]:
    """A request written to the proxy by hand (urllib would skip the proxy
    for loopback): anything but a 200 is a refusal."""

    def go() -> object:
        proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
        with socket.create_connection((proxy.hostname, proxy.port), timeout=5) as s:
            s.sendall(request.encode())
            status = s.recv(200).decode(errors="replace").splitlines()[0]
        if " 200 " not in f"{status} ":
            raise PermissionError(status)
        return status

    return go


def main() -> None:
    c = json.loads(Path(sys.argv[1]).read_text())
    ws, out = c["workspace"], c["outside"]
    results: dict[str, str] = {}
    results["write_workspace"] = attempt(write(f"{ws}/made-inside.txt"))
    results["read_project"] = attempt(read(f"{ws}/README.md"))
    results["write_absolute_outside"] = attempt(write(f"{out}/abs.txt"))
    results["write_dotdot"] = attempt(write(os.path.relpath(f"{out}/dotdot.txt", ws)))
    results["write_tmp_trick"] = attempt(write(f"/tmp/../{out.lstrip('/')}/tmp-trick.txt"))
    results["write_through_planted_symlink"] = attempt(write(f"{ws}/link-out/via-link.txt"))

    def hard_link() -> object:
        os.link(f"{out}/victim.txt", f"{ws}/hard.txt")
        Path(f"{ws}/hard.txt").write_text("escaped")
        return "linked"

    results["hard_link_out"] = attempt(hard_link)
    results["write_git_hooks"] = attempt(write(f"{ws}/.git/hooks/pre-commit"))
    results["write_git_config"] = attempt(
        lambda: subprocess.run(
            ["git", "-C", ws, "config", "core.hooksPath", "evil-hooks"],
            check=True,
            capture_output=True,
            text=True,
        )
    )
    results["read_ssh_key"] = attempt(read(c["ssh_key"]))
    results["read_deck_home"] = attempt(read(c["token"]))
    results["read_database"] = attempt(lambda: Path(c["database"]).read_bytes()[:16])
    results["read_other_workspace"] = attempt(read(c["other_workspace_file"]))
    results["read_daemon_environ"] = attempt(
        lambda: Path(f"/proc/{c['daemon_pid']}/environ").read_bytes()[:40]
    )
    port = c["local_port"]
    results["http_local_by_ip"] = attempt(http(f"http://127.0.0.1:{port}/"))
    results["http_local_by_localhost"] = attempt(http(f"http://localhost:{port}/"))
    results["http_local_via_proxy"] = attempt(
        via_proxy(f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    )
    results["connect_local_via_proxy"] = attempt(
        via_proxy(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    )
    results["http_not_allowed_domain"] = attempt(http(f"http://not-allowed.test:{port}/"))
    results["http_without_proxy"] = attempt(http(f"http://{c['host_ip']}:{port}/", proxy=False))
    results["raw_socket"] = attempt(connect(c["host_ip"], port))
    results["dns_lookup"] = attempt(lambda: socket.getaddrinfo("example.com", 80))
    results["http_allowed_domain"] = attempt(http(f"http://allowed.test:{port}/"))
    results["model_api"] = attempt(model(c.get("model_url")))

    def pytest_in_workspace() -> object:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ws],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stdout[-300:] + done.stderr[-300:])
        return done.stdout.strip().splitlines()[-1]

    results["pytest_in_workspace"] = attempt(pytest_in_workspace)
    print(json.dumps(results))  # noqa: T201 - the probe's report


if __name__ == "__main__":
    main()
