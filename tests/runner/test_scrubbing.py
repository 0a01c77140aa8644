"""Secrets never reach the event log, for agentdeck's own agents.

The redaction corpus (``tests/core/data/secrets_corpus.json``) goes through the
real Claude Code CLI on the scripted model: ``cat`` in Bash, the Read tool and the
model's own text carry every positive case; then no secret is found in the
database (every table, and the file's bytes), ``agentdeck logs``, ``GET
/api/events``, ``GET /api/agents/ID`` or the dashboard's agent page, and every
negative case arrives unchanged. Long outputs: a secret straddling the cut, a
secret inside a 5 MB output kept as a payload, raw payloads on request.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import shlex
import sqlite3
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType, ToolReturned
from agentdeck.core.redact import scrub
from agentdeck.runner.mapping import MessageMapper
from agentdeck.runner.payloads import PayloadStore
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.core.test_redact import QUOTINGS
from tests.support.deckcli import deck, deck_env
from tests.support.served import Served, serving
from tests.support.waiting import eventually
from tests.web.dashboard_support import logged_in

CORPUS = json.loads(
    (Path(__file__).parents[1] / "core" / "data" / "secrets_corpus.json").read_text()
)
POSITIVE: list[dict[str, Any]] = CORPUS["positive"]
NEGATIVE: list[str] = CORPUS["negative"]
SECRETS = sorted({s for case in POSITIVE for s in case["secrets"]})
KEY = "sk-ant-api03-" + "Zq9Xw" * 18
FINISH_SECONDS = 120.0


def _forms(secret: str) -> list[str]:
    """The secret as text and as it would sit inside JSON."""
    return sorted({secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]})


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if any(f in text for f in _forms(s))]


# An unterminated private key is redacted to the end of the text: those go last, so
# they hide no other case.
SECRETS_TXT = (
    "\n\n".join(
        case["text"]
        for case in sorted(POSITIVE, key=lambda c: "BEGIN" in c["text"] and "END" not in c["text"])
    )
    + "\n"
)


def printf_scenario(path: Path, name: str, cases: list[str]) -> tuple[Path, int]:
    """A scenario of one Bash ``printf`` a quoting (``QUOTINGS``), each of every case
    as a quoted argument; the path and the number of calls."""
    commands = [
        "printf '%s\\n' " + " ".join(quote(text) for text in cases)
        for _, quote in sorted(QUOTINGS.items())
    ]
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": command}}}]}
        for command in commands
    ]
    scenario = {
        "name": name,
        "description": "The corpus as one quoted printf argument, in each quoting.",
        "turns": [*turns, {"reply": [{"text": "done"}]}],
    }
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True, width=100_000))
    return path, len(commands)


def _scenario(root: Path) -> Path:
    secrets_txt = SECRETS_TXT
    plain_txt = "\n\n".join(NEGATIVE) + "\n"
    bash = {"name": "Bash", "input": {"command": "cat secrets.txt", "description": "Show it"}}
    plain = {"name": "Bash", "input": {"command": "cat plain.txt", "description": "Show it"}}
    scenario = {
        "name": "secrets",
        "description": "Every case of the redaction corpus through Bash, Read and text.",
        "workspace": {"files": {"secrets.txt": secrets_txt, "plain.txt": plain_txt}},
        "turns": [
            {"reply": [{"text": "Let me look."}, {"tool_use": bash}]},
            {"reply": [{"tool_use": {"name": "Read", "input": {"file_path": "secrets.txt"}}}]},
            {"reply": [{"tool_use": plain}]},
            {"reply": [{"text": secrets_txt}, {"text": plain_txt}]},
        ],
    }
    path = root / "secrets.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True, width=10_000))
    return path


def _database_texts(db: Path) -> list[str]:
    """Every text value of every table, JSON taken apart, and the files' bytes."""
    texts: list[str] = []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, str):
                        texts.append(value)
                        texts.extend(_json_strings(value))
    for path in db.parent.glob(db.name + "*"):
        texts.append(path.read_bytes().decode("utf-8", "replace"))
    return texts


def _json_strings(value: str) -> list[str]:
    try:
        data = json.loads(value)
    except ValueError:
        return []
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, item in v.items():
                out.append(str(k))
                walk(item)
        elif isinstance(v, list):
            for item in v:
                walk(item)

    walk(data)
    return out


async def _finished(served: Served, agent_id: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
        return found if not AgentState(found["state"]).is_busy and found["turns"] else None

    return await eventually(probe, timeout=FINISH_SECONDS, what="the agent to finish")


@pytest.mark.anyio
@pytest.mark.cli
async def test_no_secret_of_the_corpus_reaches_the_log_the_api_the_cli_or_the_page(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={
                "prompt": "show me the files",
                "scenario": str(scenario),
                "allow": ["Bash(cat:*)"],
                "name": "leaky",
            },
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        agent = await _finished(served, agent_id)
        assert agent["state"] == AgentState.IDLE, agent

        found = await api.get("/api/events", params={"agent": agent_id})
        events = found.json()["events"]
        kinds = [e["type"] for e in events]
        assert kinds.count(EventType.TOOL_RETURNED) == 3 and EventType.ASSISTANT_TEXT in kinds
        outputs = [e["data"]["output"] for e in events if e["type"] == EventType.TOOL_RETURNED]
        assert not any(o.startswith("denied") for o in outputs), outputs
        api_text = json.dumps(events) + (await api.get(f"/api/agents/{agent_id}")).text
        async with logged_in(SimpleNamespace(url=served.info.url, token=served.token)) as web:
            page = html.unescape((await web.get(f"/agents/{agent_id}")).text)
        logs = await asyncio.to_thread(deck, deck_env(tmp_path), "logs", agent_id)
        assert logs.code == 0, logs.err

        # Bash, Read and the model's text each showed every positive case, redacted.
        texts = [e["data"]["text"] for e in events if e["type"] == EventType.ASSISTANT_TEXT]
        marks = set(re.findall(r"\[REDACTED:[a-z-]+\]", scrub(SECRETS_TXT)))
        assert len(marks) >= 15 and scrub(SECRETS_TXT).count("[REDACTED:") >= len(POSITIVE)
        for shown in (outputs[0], outputs[1], "\n".join(texts)):
            assert marks <= set(re.findall(r"\[REDACTED:[a-z-]+\]", shown))
        assert "[REDACTED:" in page and "[REDACTED:" in logs.out
        assert leaked(api_text) == []
        assert leaked(page) == []
        assert leaked(logs.out) == []

        # Every negative case arrives as it was: in the Bash output and in the text.
        cat_plain = outputs[2]
        for case in NEGATIVE:
            assert case in cat_plain, case
            assert any(case in t for t in texts), case
    assert leaked("\n".join(_database_texts(settings.db_path))) == []


async def _finished_approving(served: Served, agent_id: str) -> dict[str, Any]:
    """The agent once finished, each of its commands allowed as Claude Code asks (it
    asks before a command holding ``$'…'``, a redirection or several lines)."""

    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            pending = await api.get("/api/approvals", params={"agent": agent_id})
            for approval in pending.json()["approvals"]:
                answer = {"decision": "allow"}
                answered = await api.post(f"/api/approvals/{approval['id']}", json=answer)
                assert answered.status_code == 200, answered.text
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
        return found if not AgentState(found["state"]).is_busy and found["turns"] else None

    return await eventually(probe, timeout=FINISH_SECONDS, what="the agent to finish")


def _quoted_forms(secret: str) -> list[str]:
    """The secret as each quoting writes it inside an argument, and in JSON."""
    bodies = {secret, shlex.quote(secret).strip("'")}
    bodies |= {quote(secret)[1:-1].lstrip("'") for quote in QUOTINGS.values()}
    return sorted({form for body in bodies for form in _forms(body)})


@pytest.mark.anyio
@pytest.mark.cli
async def test_no_secret_of_a_quoted_argument_reaches_the_events_table(
    settings: Settings, tmp_path: Path
) -> None:
    # An unterminated private key last (it hides the rest); not ``cat ~/.ssh/id_rsa``,
    # which the policy denies (its reason repeats the command's words, unquoted).
    cases = [text for text in SECRETS_TXT.split("\n\n") if ".ssh/" not in text]
    path, calls = printf_scenario(tmp_path / "quoted.yaml", "quoted-secrets", cases)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "print", "scenario": str(path), "allow": ["Bash(printf:*)"]},
        )
        assert created.status_code == 201, created.text
        agent = await _finished_approving(served, created.json()["id"])
        assert agent["state"] == AgentState.IDLE, agent
    with sqlite3.connect(f"file:{settings.db_path}?mode=ro", uri=True) as conn:
        rows = [r[0] for r in conn.execute("SELECT data FROM events")]
        kinds = [r[0] for r in conn.execute("SELECT type FROM events")]
    raw = "\n".join(rows)
    assert kinds.count(EventType.TOOL_RETURNED) == calls
    assert '"decision": "deny"' not in raw and '"decision":"deny"' not in raw
    assert raw.count("[REDACTED:") >= 3 * len(cases)
    hits = [s for s in SECRETS if any(form in raw for form in _quoted_forms(s))]
    assert hits == []


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_secret_in_a_five_megabyte_output_stays_out_of_its_payload_and_event(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    printer = (
        "import sys\n"
        "key = 'sk-ant-api03-' + 'Zq9Xw' * 18\n"
        "line = '\\nANTHROPIC_API_KEY=' + key + '\\n'\n"
        "sys.stdout.write('x' * 2_500_000 + line + 'y' * 2_500_000)\n"
    )
    scenario = {
        "name": "big-secret",
        "description": "5 MB of output with a key in the middle",
        "workspace": {"files": {"big.py": printer}},
        "turns": [
            {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "python3 big.py"}}}]},
            {"reply": [{"text": "done"}]},
        ],
    }
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(scenario))
    session = await runner.start(
        AgentSpec(prompt="print", scenario=str(path), allow=("Bash(python3:*)",))
    )
    await session.wait_finished(timeout=FINISH_SECONDS)
    assert session.agent.state == AgentState.DONE
    (returned,) = [
        e for e in await store.read(agent_id=session.agent.id) if e.type == EventType.TOOL_RETURNED
    ]
    assert returned.data["truncated"] is True and returned.data["size"] > 5_000_000
    assert KEY not in returned.data["output"]
    payload = Path(returned.data["payload_path"])
    kept = payload.read_text()
    assert KEY not in kept and "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]" in kept
    assert kept.startswith("x" * 2_500_000 + "\n") and kept.endswith("\n" + "y" * 2_500_000)
    assert stat.S_IMODE(payload.stat().st_mode) == 0o600
    assert stat.S_IMODE(payload.parent.stat().st_mode) == 0o700


def _result(text: str) -> Any:
    from claude_agent_sdk import ToolResultBlock, UserMessage

    return UserMessage(content=[ToolResultBlock(tool_use_id="t1", content=text)])


def _returned(mapper: MessageMapper, text: str) -> ToolReturned:
    (event,) = mapper.map(_result(text)).events
    assert isinstance(event, ToolReturned)
    return event


@pytest.mark.parametrize("offset", [-40, -13, -1, 0, 5, 30])
def test_a_secret_straddling_the_cut_leaves_no_piece_in_the_event(
    tmp_path: Path, offset: int
) -> None:
    limit = 2000
    mapper = MessageMapper("a1", PayloadStore(tmp_path), output_limit=limit)
    text = "a" * (limit + offset) + " " + KEY + " " + "b" * limit
    event = _returned(mapper, text)
    assert len(event.output.encode()) <= limit
    tail = event.output[limit + offset :]
    assert not any(KEY[:n] in tail for n in range(4, len(KEY) + 1)), tail
    kept = Path(event.payload_path or "").read_text()
    assert KEY not in kept and "[REDACTED:anthropic-key]" in kept


def test_raw_payloads_keep_the_output_whole_for_its_owner_and_the_event_scrubbed(
    tmp_path: Path,
) -> None:
    mapper = MessageMapper("a1", PayloadStore(tmp_path / "p", raw=True), output_limit=100)
    text = "a" * 90 + " " + KEY + "\n" + "b" * 500
    event = _returned(mapper, text)
    assert KEY[:8] not in event.output
    payload = Path(event.payload_path or "")
    assert payload.read_text() == text
    assert stat.S_IMODE(payload.stat().st_mode) == 0o600
    assert stat.S_IMODE(payload.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("raw", [False, True])
def test_a_file_claude_code_persisted_is_adopted_scrubbed_unless_raw(
    tmp_path: Path, raw: bool
) -> None:
    persisted = tmp_path / "cli-output.txt"
    persisted.write_text("lots of output\nexport GITHUB_TOKEN=" + "ghp_" + "R4" * 20 + "\n")
    store = PayloadStore(tmp_path / "payloads", raw=raw)
    kept = Path(store.adopt("a1", "t1", str(persisted)) or "")
    assert ("ghp_" in kept.read_text()) is raw
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert store.adopt("a1", "t2", str(tmp_path / "gone.txt")) is None
