"""Start-up of the MCP side: ``import claude_agent_sdk`` and ``agentdeck mcp``'s servers.

    .venv/bin/python benchmarks/mcp_start.py [--rounds 9] [--other-python OTHER_VENV/bin/python]

Each measure is a fresh process: ``python -c "import claude_agent_sdk"`` (paid by every
embedded ``agentdeck run``: the SDK's ``__init__`` imports ``mcp.types``), then
``agentdeck mcp`` and ``agentdeck mcp --orchestrate`` (what Claude Code spawns for a
session), timed from spawn to the answer to ``initialize`` and then to ``tools/list``
over stdio. With ``--other-python`` (another venv with agentdeck installed, e.g. on
another mcp major) the two interpreters alternate round by round, the order rotating,
so drift on a shared machine hits both alike. One warm-up of each is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from _common import clean_env, header, median

TIMEOUT = 60.0


def import_sdk(python: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-c", "import claude_agent_sdk"], env=env, check=True, timeout=TIMEOUT)
    return time.perf_counter() - start


def serve(python: str, env: dict[str, str], *flags: str) -> tuple[float, float, int]:
    """Seconds to the ``initialize`` answer, to the ``tools/list`` answer, and the tools."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "agentdeck", "mcp", *flags],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, object]) -> dict[str, object] | None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" not in message:
            return None
        answer: dict[str, object] = json.loads(proc.stdout.readline())
        if "result" not in answer:
            raise SystemExit(f"agentdeck mcp {' '.join(flags)}: {answer}")
        return answer

    client = {"name": "mcp_start", "version": "0"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    initialized = time.perf_counter() - start
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed_at = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(TIMEOUT)
    assert listed is not None
    tools = listed["result"]["tools"]  # type: ignore[index]
    return initialized, listed_at, len(tools)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--other-python", help="a second interpreter (venv) to alternate with")
    args = parser.parse_args()
    header("mcp start-up: import claude_agent_sdk, agentdeck mcp [--orchestrate]")
    pythons = {"this": sys.executable}
    if args.other_python:
        pythons["other"] = args.other_python
    for name, python in pythons.items():
        version = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print(f"  {name}: {python} (mcp {version})")
    with tempfile.TemporaryDirectory(prefix="agentdeck-mcp-start-") as tmp:
        env = clean_env(
            AGENTDECK_HOME=f"{tmp}/home",
            AGENTDECK_CLAUDE_CONFIG_DIR=f"{tmp}/claude-config",
            AGENTDECK_PORT="0",
            CLAUDE_CODE_SESSION_ID="mcp-start-bench",
            CLAUDE_PROJECT_DIR=tmp,
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed agentdeck runs
        for python in pythons.values():  # warm-up: bytecode caches, the store's migration
            import_sdk(python, env)
            serve(python, env)
            serve(python, env, "--orchestrate")
        seconds: dict[tuple[str, str], list[float]] = {}
        loads = []
        for i in range(args.rounds):
            loads.append(os.getloadavg()[0])
            order = list(pythons)[i % len(pythons) :] + list(pythons)[: i % len(pythons)]
            for name in order:
                python = pythons[name]
                seconds.setdefault((name, "import claude_agent_sdk"), []).append(
                    import_sdk(python, env)
                )
                for flags in ((), ("--orchestrate",)):
                    initialized, listed, tools = serve(python, env, *flags)
                    what = " ".join(["agentdeck mcp", *flags])
                    seconds.setdefault((name, f"{what}: initialize"), []).append(initialized)
                    seconds.setdefault((name, f"{what}: tools/list ({tools})"), []).append(listed)
    print(
        f"  {args.rounds} rounds; 1-minute load average at their starts: median "
        f"{median(loads):.2f} (min {min(loads):.2f}, max {max(loads):.2f})"
    )
    print(f"\n  {'median seconds from spawn':<46}" + "".join(f"{n:>9}" for n in pythons))
    for what in dict.fromkeys(w for _, w in seconds):
        cells = "".join(f"{median(seconds[(n, what)]):>8.3f}s" for n in pythons)
        print(f"  {what:<46}{cells}")


if __name__ == "__main__":
    main()
