"""How long the CLI's commands take, whole process, against the interpreter itself.

    .venv/bin/python benchmarks/cli.py [--runs 15] [--against OTHER/src]

On a fresh home with a few finished agents (the scripted model), each command is run
``--runs`` times, alternating with ``python -c pass``: first with a daemon running
(every command then talks to it over HTTP), then without (read-only commands open
the store themselves). Prints the median and p90 of each, and its median ratio to
``python -c pass``. Goals (issue 14): <= 100 ms median with a daemon, <= 150 ms
without.

What is timed is the installed ``agentdeck`` script, as a user runs it, with the
package's bytecode compiled (as an install leaves it; the benchmark compiles it
first, and lets Python write it even where PYTHONDONTWRITEBYTECODE is set).
Commands that act on a finished agent or an unknown id (``interrupt``, ``kill``,
``approve``, ``deny``, ``answer``, ``send``, ``resume``) are timed up to the
daemon's refusal: the whole path (a real ``send`` or ``resume`` then follows a
model turn, which is the model's time, not the CLI's).

``--against OTHER/src`` times another source tree too (say a worktree of ``main``:
``git worktree add /tmp/cli-before main``), through the same script and venv with
``PYTHONPATH=OTHER/src``, in alternation with this one and ``python -c pass``,
against the same daemon and home: a before/after on one machine in one session.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import clean_env, header, median, percentile

AGENTDECK = [str(Path(sys.executable).with_name("agentdeck"))]
WITH_DAEMON = (
    ["--help"], ["status"], ["ls"], ["ls", "--json"], ["show", "bench-0"], ["logs", "bench-0"],
    ["send", "nope", "hi"], ["interrupt", "bench-0"], ["kill", "bench-0"], ["resume", "nope"],
    ["approvals"], ["approve", "nope"], ["deny", "nope"], ["asks"], ["answer", "nope", "yes"],
    ["memory", "search", "greeting"], ["policy", "check", "Bash(git status)"], ["queue"],
)  # fmt: skip
EMBEDDED = (
    ["ls"], ["ls", "--json"], ["show", "bench-0"], ["logs", "bench-0"], ["approvals"], ["asks"],
    ["queue"],
)  # fmt: skip


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - started
    if done.returncode not in (0, 1, 3):  # policy check: 1 deny, 3 ask
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-800:]}")
    return took


def measure(
    commands: tuple[list[str], ...], env: dict[str, str], runs: int, against: Path | None
) -> None:
    other = None if against is None else {**env, "PYTHONPATH": str(against)}
    for args in commands:
        mine, theirs, bare = [], [], []
        for _ in range(runs):  # alternating: drift on a shared machine hits all alike
            mine.append(timed([*AGENTDECK, *args], env))
            if other is not None:
                theirs.append(timed([*AGENTDECK, *args], other))
            bare.append(timed([sys.executable, "-c", "pass"], env))
        ratio = median([m / b for m, b in zip(mine, bare, strict=True)])
        versus = (
            f"  | {against}: median {median(theirs) * 1000:4.0f} ms  "
            f"p90 {percentile(theirs, 90) * 1000:4.0f} ms"
            if theirs
            else ""
        )
        print(
            f"    {' '.join(args):<28} median {median(mine) * 1000:4.0f} ms  "
            f"p90 {percentile(mine, 90) * 1000:4.0f} ms  {ratio:4.1f}x python -c pass "
            f"({median(bare) * 1000:.0f} ms){versus}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another tree's src/, timed alongside")
    args = parser.parse_args()
    header("cli: how long each command takes, whole process")
    import agentdeck

    trees = [Path(agentdeck.__file__).parent]
    if args.against is not None:
        args.against = args.against.resolve()
        if not (args.against / "agentdeck" / "__init__.py").is_file():
            sys.exit(f"--against {args.against}: no agentdeck package there (give its src/)")
        trees.append(args.against / "agentdeck")
    for tree in trees:
        env = clean_env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree)],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        env = clean_env(AGENTDECK_HOME=str(Path(tmp) / "home"), AGENTDECK_PORT="0")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for i in range(3):
            subprocess.run(
                [*AGENTDECK, "run", "--scenario", "chat", "--name", f"bench-{i}", "--json",
                 "Hello! Who are you?"],
                env=env, capture_output=True, check=True, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        up = subprocess.run(
            [*AGENTDECK, "up", "--detach"], env=env, capture_output=True, text=True, check=True
        )
        try:
            status = json.loads(
                subprocess.run(
                    [*AGENTDECK, "status", "--json"], env=env, capture_output=True, check=True
                ).stdout
            )
            print(f"  with a daemon ({status.get('url', up.stdout.strip())}), {args.runs} runs:")
            measure(WITH_DAEMON, env, args.runs, args.against)
        finally:
            subprocess.run([*AGENTDECK, "down"], env=env, capture_output=True)
        print(f"  without a daemon (embedded), {args.runs} runs:")
        measure(EMBEDDED, env, args.runs, args.against)
    print("  load average at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
