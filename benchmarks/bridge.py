"""Chat bridge latency: a message arriving at the bridge to the first reply text
sent back, against the scripted model.

    .venv/bin/python benchmarks/bridge.py [--runs 5] [--followups 10]

- ``first``: a message in a new conversation (the bridge starts an agent through
  the daemon's API and follows its event stream) until the platform is asked to
  send the reply's first text; compared, alternating in the same run, with the bare
  ``claude -p`` from spawn to its first assistant text line. Goal: median ratio
  ≤ 1.2.
- ``follow-up``: a message to the same conversation's live, idle agent until the
  reply's first text is sent, less the agent's own time for it (its
  ``assistant_text`` event's time less its ``user_message_sent`` event's: the CLI
  and the model). Goal: median ≤ 150 ms above that.

The daemon runs in this process (as ``agentdeck up`` does, on a port of its own);
the scripted model runs in its own process, and both the bare CLI and the deck's
agents talk to it. The bridge edits without throttling (interval 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from _common import bundled_cli, clean_env, header, median, model_process
from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon import connect
from agentdeck.bridges.platform import Actor, Conversation, Incoming, Prompt
from agentdeck.core.deck import Deck as DeckInterface
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.serve import serve
from agentdeck.settings import Settings

GOAL_RATIO = 1.2
GOAL_FOLLOWUP_MS = 150.0
TIMEOUT = 120.0
MEMBER = Actor("bench", "1", "bench")


class TimedPlatform:
    """Records when each conversation's first reply text is sent."""

    name = "bench"
    message_limit = 2000

    def __init__(self) -> None:
        self.first_text: dict[str, asyncio.Future[float]] = {}
        self.idle: dict[str, asyncio.Event] = {}

    def expect(self, key: str) -> asyncio.Future[float]:
        self.first_text[key] = asyncio.get_running_loop().create_future()
        return self.first_text[key]

    def _shown(self, conversation: Conversation) -> str:
        waiting = self.first_text.get(conversation.key)
        if waiting is not None and not waiting.done():
            waiting.set_result(time.perf_counter())
        return str(time.perf_counter_ns())

    async def send(self, conversation: Conversation, text: str) -> str:
        return self._shown(conversation)

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None:
        self._shown(conversation)

    async def attach(
        self, conversation: Conversation, filename: str, data: bytes, text: str
    ) -> str:
        return "file"

    async def react(self, conversation: Conversation, message_id: str, emoji: str) -> None:
        pass

    async def set_busy(self, conversation: Conversation, busy: bool) -> None:
        idle = self.idle.setdefault(conversation.key, asyncio.Event())
        if busy:
            idle.clear()
        else:
            idle.set()

    async def prompt(self, conversation: Conversation, prompt: Prompt) -> str:
        return "prompt"

    async def close_prompt(self, conversation: Conversation, message_id: str, text: str) -> None:
        pass


def bare_first_text(url: str, tmp: Path) -> float:
    """Seconds from spawning ``claude -p`` to its first assistant text line."""
    run_dir = Path(tempfile.mkdtemp(prefix="bare-", dir=tmp))
    (run_dir / "work").mkdir()
    env = clean_env(
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="sk-bench",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
    )
    argv = [str(bundled_cli()), "-p", "hello", "--output-format", "stream-json", "--verbose"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=run_dir / "work",
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    first: float | None = None
    try:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, ""):
            line = json.loads(raw) if raw.strip() else {}
            if first is None and line.get("type") == "assistant":
                blocks = line["message"]["content"]
                if any(b.get("type") == "text" for b in blocks):
                    first = time.perf_counter() - started
        proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if first is None:
        raise RuntimeError("the bare CLI printed no text")
    return first


async def turn_time(deck: DeckInterface, agent_id: str) -> float:
    """The agent's own time for its last turn's first text: CLI and model."""
    events = await deck.events(agent_id=agent_id, limit=1000)
    sent = [e.ts for e in events if e.type == "user_message_sent"][-1]
    text = next(e.ts for e in events if e.type == "assistant_text" and e.ts >= sent)
    return float(text - sent)


async def bench(runs: int, followups: int, tmp: Path, url: str) -> None:
    settings = Settings(
        home=tmp / "home",
        claude_config_dir=tmp / "claude-config",
        port=0,
        anthropic_base_url=url,
        anthropic_api_key=SecretStr("sk-bench"),
    )
    ready: asyncio.Future[tuple[DaemonInfo, str]] = asyncio.get_running_loop().create_future()

    async def on_ready(deck: Deck, info: DaemonInfo, token: str) -> None:
        ready.set_result((info, token))

    stop = asyncio.Event()
    daemon = asyncio.create_task(serve(settings, on_ready=on_ready, stop=stop))
    info, token = await asyncio.wait_for(ready, 60)
    client = connect(info.url, token)
    platform = TimedPlatform()
    channels = frozenset(f"c{i}" for i in range(runs))
    bridge = Bridge(
        platform, client, tmp / "bridge.json", BridgeConfig(channels=channels, edit_interval=0)
    )
    serving = asyncio.create_task(bridge.run())
    await bridge.ready.wait()
    first: list[float] = []
    bare: list[float] = []
    try:
        for i in range(runs):
            bare.append(await asyncio.to_thread(bare_first_text, url, tmp))
            conversation = Conversation(f"c{i}")
            shown = platform.expect(conversation.key)
            started = time.perf_counter()
            await bridge.handle(Incoming(conversation, MEMBER, "hello"))
            first.append(await asyncio.wait_for(shown, TIMEOUT) - started)
            print(f"  run {i + 1}: bridge {first[-1] * 1000:.0f} ms, bare {bare[-1] * 1000:.0f} ms")
        over: list[float] = []
        conversation = Conversation("c0")
        agent_id = bridge.state.conversations["c0"].agent_id
        assert agent_id is not None
        for _ in range(followups):
            # The previous turn's end (not just its first text): the message is sent,
            # not queued.
            await asyncio.wait_for(platform.idle.setdefault("c0", asyncio.Event()).wait(), TIMEOUT)
            shown = platform.expect(conversation.key)
            started = time.perf_counter()
            await bridge.handle(Incoming(conversation, MEMBER, "again"))
            latency = await asyncio.wait_for(shown, TIMEOUT) - started
            over.append(latency - await turn_time(client, agent_id))
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await client.aclose()
        stop.set()
        await daemon
    ratio = median(first) / median(bare)
    print(
        f"first reply: bridge median {median(first) * 1000:.0f} ms, bare claude -p "
        f"{median(bare) * 1000:.0f} ms, ratio {ratio:.2f} (goal ≤ {GOAL_RATIO})"
    )
    over_ms = median(over) * 1000
    print(
        f"follow-up: median {over_ms:.0f} ms above the agent's own time "
        f"(min {min(over) * 1000:.0f}, max {max(over) * 1000:.0f}; goal ≤ {GOAL_FOLLOWUP_MS:.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--followups", type=int, default=10)
    args = parser.parse_args()
    header("bridge: chat message to first reply text")
    with tempfile.TemporaryDirectory(prefix="agentdeck-bench-bridge-") as name:
        tmp = Path(name)
        with model_process("chat", tmp) as url:
            asyncio.run(bench(args.runs, args.followups, tmp, url))


if __name__ == "__main__":
    main()
