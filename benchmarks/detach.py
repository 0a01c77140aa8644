"""How long ``agentdeck up --detach`` keeps its terminal once the daemon's API answers.

    .venv/bin/python benchmarks/detach.py [--runs 7] [--against OTHER/src]

Each run starts ``up --detach`` on a fresh home, polls the address the daemon
publishes (``daemon.json``) until its API answers (a 401 without the token is an
answer), notes when the command returns, then stops the daemon (``down``).
Prints the median, min and max of that lag (what the user waits for after the
daemon is ready: the parent's own start-up and its banner) and of the whole
command. Goal (issue 28): the parent loads no server to print the banner; the
lag is then its poll interval (0.1 s) and an exit, not an import of the server.

``--against OTHER/src`` times another source tree too (a worktree of an earlier
commit: ``git worktree add /tmp/before <commit>``), with ``PYTHONPATH=OTHER/src``,
in alternation with this one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from _common import clean_env, header, median

AGENTDECK = [str(Path(sys.executable).with_name("agentdeck"))]


def answers(home: Path) -> bool:
    try:
        port = json.loads((home / "daemon.json").read_text())["port"]
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/stats", timeout=1)
    except urllib.error.HTTPError:
        return True  # 401 without the token: it answers
    except (OSError, ValueError, KeyError):
        return False
    return True


def once(env: dict[str, str]) -> tuple[float, float]:
    """(seconds from the API answering to the command's return, the whole command)."""
    home = Path(env["AGENTDECK_HOME"])
    started = time.monotonic()
    parent = subprocess.Popen(
        [*AGENTDECK, "up", "--detach"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    ready: float | None = None
    try:
        while parent.poll() is None:
            if ready is None and answers(home):
                ready = time.monotonic()
            time.sleep(0.005)
        returned = time.monotonic()
        if parent.returncode != 0:
            sys.exit(f"up --detach failed: {parent.stderr.read().decode()[-800:]}")  # type: ignore[union-attr]
    finally:
        subprocess.run([*AGENTDECK, "down"], env=env, capture_output=True)
    return returned - (ready if ready is not None else returned), returned - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another tree's src/, timed alongside")
    args = parser.parse_args()
    header("detach: up --detach's wait after the daemon's API answers")
    trees: list[tuple[str, dict[str, str]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = clean_env(AGENTDECK_HOME=str(Path(tmp) / "home"), AGENTDECK_PORT="0",
                         AGENTDECK_WARM_POOL="0")  # fmt: skip
        trees.append(("this tree", base))
        if args.against is not None:
            other = args.against.resolve()
            if not (other / "agentdeck" / "__init__.py").is_file():
                sys.exit(f"--against {other}: no agentdeck package there (give its src/)")
            # A home of its own: each tree's migrations are its own.
            home = str(Path(tmp) / "other-home")
            trees.append((str(other), {**base, "PYTHONPATH": str(other), "AGENTDECK_HOME": home}))
        results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
        for _, env in trees:
            once(env)  # a warm-up: the home, its database and the token made once
        for _ in range(args.runs):  # alternating: drift on a shared machine hits all alike
            for name, env in trees:
                results[name].append(once(env))
    for name, runs in results.items():
        lags, wholes = [r[0] for r in runs], [r[1] for r in runs]
        print(
            f"  {name}: returned {median(lags) * 1000:.0f} ms after the API answered "
            f"(min {min(lags) * 1000:.0f}, max {max(lags) * 1000:.0f}); whole command "
            f"median {median(wholes):.2f} s, {len(runs)} runs"
        )


if __name__ == "__main__":
    main()
