"""Secrets planted through every path reach no table, no file of the home, no byte
of the database.

One daemon, the real Claude Code CLI on the scripted model, and the redaction
corpus (``tests/core/data/secrets_corpus.json``) planted through every way text
enters agentdeck:

* the prompt as typed, and a ``send`` message to the running agent;
* Bash output (``cat``, and one past what Claude Code shows inline, kept as a
  payload file), the Read tool, the model's own text, a token as a tool's name
  (the agent's current tool, the event's ``tool``);
* a call that changes files (a heredoc of the corpus): its checkpoint's message;
* an approval: the tool input of an asked call (``curl -u admin:<password> …``)
  and the approver's message (a denial's reason, an approval's message);
* a question for a person (``ask_orchestrator``) and its answer;
* a worktree agent's diff (a file it wrote; as the API serves it too) and a
  merge test printing it;
* a webhook target that fails answering with the corpus in its body.

Then every table (``SELECT *`` from each table ``sqlite_master`` lists, every
column, JSON taken apart), every file under the agentdeck home, and the raw bytes
of the database file, its ``-wal`` and ``-shm`` (while the daemon runs and after
it stopped): zero hits. Left out, as the agent's own files, which it must keep
whole to work on them:

* ``workspaces/`` and ``worktrees/`` (the agents' working directories, where it
  wrote the corpus itself; the merge's scratch worktree is under ``worktrees/``);
* ``checkpoints/<agent>/objects/`` (snapshots of those same files, restored
  whole on a rewind; compressed, so their bytes would prove nothing): what the
  checkpoints say of the calls, their commits' messages, is read through git.

Claude Code's own config and transcripts are in ``claude_config_dir``, outside
the home (``tests.conftest.make_settings``): Claude Code writes them, not
agentdeck, and they hold the conversation as the model saw it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.core.events import EventType
from agentdeck.store.notify import DeadLetters
from tests.conftest import make_settings
from tests.governance.test_secret_tables import CURL, MESSAGE
from tests.runner.test_scrubbing import SECRETS_TXT, _json_strings, leaked
from tests.support.receiver import Receiver
from tests.support.served import Served, serving
from tests.support.waiting import eventually
from tests.worktrees.conftest import make_repo

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

DEADLINE = 180.0  # a loaded 2-core machine runs several Claude Codes at once
CURL_CALL = CURL.removeprefix("echo ")  # asked under the default profile: denied here
# Left out of the walk of the home: the agents' own files (see the module's doc).
AGENTS_OWN = ("workspaces", "worktrees")
GITHUB_TOKEN = "ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd"  # in the corpus: leaked() finds it


def _write(root: Path, name: str, scenario: dict[str, Any]) -> str:
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True, width=10**5))
    return str(path)


def _everything(root: Path) -> str:
    """One agent meets the corpus through Bash, Read, an asked call, a question
    and its own text; then a ``send`` message."""
    ask = {"name": "mcp__deck__ask_orchestrator", "input": {"question": SECRETS_TXT}}
    bash = {"name": "Bash", "input": {"command": "cat secrets.txt", "description": "Show it"}}
    read = {"name": "Read", "input": {"file_path": "secrets.txt"}}
    curl = {"name": "Bash", "input": {"command": CURL_CALL}}
    # A tool's name is the model's text (a field the log does not scrub as text): a
    # token as a name (no such tool).
    named = {"name": GITHUB_TOKEN, "input": {}}
    # A call that changes files: a checkpoint before it, its message naming it.
    heredoc = {"name": "Bash", "input": {"command": f"cat > notes.txt <<'EOF'\n{SECRETS_TXT}EOF"}}
    # Past what Claude Code shows inline: kept as a payload file.
    loud = {"name": "Bash", "input": {"command": "for i in $(seq 1 40); do cat secrets.txt; done"}}
    return _write(
        root,
        "everything",
        {
            "name": "everything",
            "workspace": {"files": {"secrets.txt": SECRETS_TXT}},
            "turns": [
                {"reply": [{"text": "Let me look."}, {"tool_use": bash}]},
                {"reply": [{"tool_use": read}]},
                {"reply": [{"tool_use": named}]},
                {"reply": [{"tool_use": loud}]},
                {"reply": [{"tool_use": curl}]},
                {"reply": [{"tool_use": heredoc}]},
                {"reply": [{"tool_use": ask}]},
                {"reply": [{"text": SECRETS_TXT}]},
                {"reply": [{"text": "Got your message."}]},
            ],
        },
    )


def _writer(root: Path) -> str:
    write = {"name": "Write", "input": {"file_path": "notes.txt", "content": SECRETS_TXT}}
    return _write(
        root,
        "writer",
        {
            "name": "writer",
            "turns": [{"reply": [{"tool_use": write}]}, {"reply": [{"text": "ok"}]}],
        },
    )


async def _create(served: Served, body: dict[str, Any]) -> str:
    async with served.api() as api:
        created = await api.post("/api/agents", json=body)
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


async def _drive(served: Served, agent_id: str, turns: int) -> dict[str, Any]:
    """The agent once ``turns`` turns are over, each waiting call and question
    answered by a person saying secrets: the curl call denied, others allowed."""

    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            pending = await api.get("/api/approvals", params={"agent": agent_id})
            for approval in pending.json()["approvals"]:
                curl = "curl" in json.dumps(approval["input"])
                answer = (
                    {"decision": "deny", "message": MESSAGE}
                    if curl
                    else {"decision": "allow", "message": MESSAGE}
                )
                done = await api.post(f"/api/approvals/{approval['id']}", json=answer)
                assert done.status_code == 200, done.text
            for ask in (await api.get("/api/asks")).json()["asks"]:
                done = await api.post(f"/api/asks/{ask['id']}", json={"answer": MESSAGE})
                assert done.status_code == 200, done.text
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
        over = not AgentState(found["state"]).is_busy and found["turns"] >= turns
        return found if over else None

    return await eventually(probe, timeout=DEADLINE, what=f"{agent_id} to finish turn {turns}")


def _tables(db: Path) -> dict[str, list[str]]:
    """Every text of every row of every table (JSON taken apart), by table."""
    out: dict[str, list[str]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in names:
            texts = out.setdefault(table, [])
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", "replace")
                    if isinstance(value, str):
                        texts.append(value)
                        texts.extend(_json_strings(value))
    return out


def _database_bytes(db: Path) -> dict[str, list[str]]:
    found = {}
    for suffix in ("", "-wal", "-shm"):
        path = db.with_name(db.name + suffix)
        if path.exists():
            found[path.name] = leaked(path.read_bytes().decode("utf-8", "replace"))
    return found


def _home_files(home: Path) -> dict[str, list[str]]:
    """Every file under the home but the agents' own, and what it leaks."""
    found: dict[str, list[str]] = {}
    for root, dirs, files in os.walk(home):
        if Path(root) == home:
            dirs[:] = [d for d in dirs if d not in AGENTS_OWN]
        if Path(root).parent == home / "checkpoints":
            dirs[:] = [d for d in dirs if d != "objects"]  # read through git below
        for name in files:
            path = Path(root) / name
            if path.is_symlink() or not path.is_file():
                continue
            found[str(path.relative_to(home))] = leaked(
                path.read_bytes().decode("utf-8", "replace")
            )
    return found


def _checkpoint_messages(checkpoints: Path) -> dict[str, list[str]]:
    """What each agent's checkpoint repository says of its calls (its commits'
    messages, which its compressed objects hold), and what that leaks."""
    found = {}
    for shadow in sorted(p for p in checkpoints.iterdir() if p.is_dir()):
        log = subprocess.run(
            ["git", f"--git-dir={shadow}", "log", "--all", "--format=%B"],
            capture_output=True,
            text=True,
            check=True,
        )
        found[shadow.name] = leaked(log.stdout)
    assert found, "no checkpoint was taken"
    return found


def _hits(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {where: hits for where, hits in found.items() if hits}


async def test_the_corpus_through_every_path_leaves_no_secret_in_the_home(
    tmp_path: Path,
) -> None:
    settings = make_settings(
        tmp_path, notify_backoff_seconds=0.01, notify_attempts=2, notify_timeout_seconds=5
    )
    settings.ensure_home()
    failing = Receiver(then=500, body=json.dumps({"error": SECRETS_TXT}).encode())
    notify = settings.home_dir / "notify.yaml"
    notify.write_text(
        yaml.safe_dump({"targets": [{"name": "ops", "kind": "webhook", "url": failing.url}]})
    )
    notify.chmod(0o600)
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    try:
        async with serving(settings) as served:
            everything = await _create(
                served,
                {
                    "prompt": "show me the files; the keys are:\n" + SECRETS_TXT,
                    "scenario": _everything(tmp_path),
                    "allow": ["Bash(cat:*)", "Read"],
                    "profile": "default",
                },
            )
            writer = await _create(
                served,
                {
                    "prompt": "write the notes",
                    "scenario": _writer(tmp_path),
                    "workspace": "worktree",
                    "cwd": str(repo),
                    "allow": ["Write"],
                },
            )
            first = await _drive(served, everything, 1)
            assert first["state"] == AgentState.IDLE, first
            async with served.api() as api:
                sent = await api.post(
                    f"/api/agents/{everything}/messages", json={"text": "also:\n" + SECRETS_TXT}
                )
                assert sent.status_code == 200, sent.text
            await _drive(served, everything, 2)
            await _drive(served, writer, 1)
            async with served.api() as api:
                diff = await api.get(f"/api/agents/{writer}/diff")
                assert diff.status_code == 200, diff.text
                merged = await api.post(
                    f"/api/agents/{writer}/merge",
                    json={"test": "cat notes.txt; exit 1"},
                    timeout=DEADLINE,
                )
                assert merged.status_code == 200, merged.text
                events = (await api.get("/api/events", params={"agent": everything})).json()
            letters = await eventually(
                DeadLetters(served.deck._store).list_letters, timeout=60, what="a dead letter"
            )
            running = _database_bytes(settings.db_path)
    finally:
        failing.server.shutdown()
        failing.server.server_close()

    # Every path was taken, and shown redacted.
    kinds = [e["type"] for e in events["events"]]
    assert kinds.count(EventType.TOOL_RETURNED) >= 5, kinds
    said = [e["data"]["text"] for e in events["events"] if e["type"] == "user_message_sent"]
    assert said[0].startswith("show me the files"), said
    assert any(text.startswith("also:\n") for text in said), said
    assert "[REDACTED:" in diff.json()["patch"] and leaked(diff.text) == []
    outcome = merged.json()
    assert outcome["landed"] is False and "[REDACTED:" in json.dumps(outcome), outcome
    assert letters and failing.received
    tables = _tables(settings.db_path)
    for table, planted in (("approvals", 2), ("asks", 1), ("merges", 1), ("notify_dead", 1)):
        assert len(tables[table]) >= planted, (table, tables[table])

    assert _hits({t: leaked("\n".join(texts)) for t, texts in tables.items()}) == {}
    assert _hits(running) == {}
    assert _hits(_database_bytes(settings.db_path)) == {}
    assert _hits(_home_files(settings.home_dir)) == {}
    assert _hits(_checkpoint_messages(settings.checkpoints_dir)) == {}
    # The agent's own files are left out, not absent: the corpus is there, whole.
    assert (Path(first["cwd"]) / "secrets.txt").read_text() == SECRETS_TXT
