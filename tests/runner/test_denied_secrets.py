"""A denied command's reason shows it quoted, so no secret it held is stored.

The policy's reason repeats the command (``command `…` denied: …``). Its words
were joined with spaces, unquoted: ``printf %s 'auth_token: v'`` became
``printf %s auth_token: v`` followed by more words, which the scrubber rightly
reads as prose, so the value stayed in ``permission_resolved`` and the audit log.
Here the redaction corpus, in each of three quotings, is one command the profile
denies, on the real Claude Code CLI: no secret reaches the events or audit tables.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.events import EventType
from agentdeck.core.policy import decide
from agentdeck.core.policy_profile import Profile
from agentdeck.core.redact import scrub
from agentdeck.settings import Settings
from tests.core.test_redact import QUOTINGS
from tests.runner.test_scrubbing import (
    FINISH_SECONDS,
    POSITIVE,
    SECRETS,
    SECRETS_TXT,
    _quoted_forms,
    printf_scenario,
)
from tests.support.served import Served, serving
from tests.support.waiting import eventually


async def _finished_denying(served: Served, agent_id: str) -> dict[str, Any]:
    """The agent once finished, each call that waits for a person denied (one the
    policy cannot judge, ``$'…'``, is asked rather than denied by a rule)."""

    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            pending = await api.get("/api/approvals", params={"agent": agent_id})
            for approval in pending.json()["approvals"]:
                answer = {"decision": "deny"}
                answered = await api.post(f"/api/approvals/{approval['id']}", json=answer)
                assert answered.status_code == 200, answered.text
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
        return found if not AgentState(found["state"]).is_busy and found["turns"] else None

    return await eventually(probe, timeout=FINISH_SECONDS, what="the agent to finish")


@pytest.mark.parametrize("quoting", sorted(QUOTINGS))
def test_a_reason_quotes_the_command_so_its_last_argument_is_redacted(quoting: str) -> None:
    # ``command `printf %s 'auth_token: v'`; profile …``: the quote before the
    # backtick closes the argument, the words after are the reason's, not the value's.
    leaks = []
    for case in POSITIVE:
        command = "printf %s " + QUOTINGS[quoting](case["text"])
        verdict = decide(Profile(name="p"), "Bash", {"command": command}, workspace="/w", home="/h")
        shown = scrub(verdict.reason)
        leaks += [s for s in case["secrets"] if any(f in shown for f in _quoted_forms(s))]
    assert leaks == []


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_denied_command_quoting_the_corpus_leaves_no_secret_in_events_or_audit(
    settings: Settings, tmp_path: Path
) -> None:
    cases = SECRETS_TXT.split("\n\n")  # an unterminated private key last
    path, calls = printf_scenario(tmp_path / "denied.yaml", "denied-secrets", cases)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "print", "scenario": str(path), "deny": ["Bash(printf:*)"]},
        )
        assert created.status_code == 201, created.text
        agent = await _finished_denying(served, created.json()["id"])
        assert agent["state"] == AgentState.IDLE, agent
    uri = f"file:{settings.db_path}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        resolved = [
            r[0]
            for r in conn.execute(
                "SELECT data FROM events WHERE type = ?", (EventType.PERMISSION_RESOLVED,)
            )
        ]
        events = "\n".join(r[0] for r in conn.execute("SELECT data FROM events"))
        audit = "\n".join(str(r) for r in conn.execute("SELECT * FROM audit"))
    # Each call was denied, its reason saying which command, redacted.
    assert len(resolved) >= calls and all('"deny"' in r for r in resolved), resolved
    assert sum("command `printf" in r for r in resolved) >= 2, resolved
    assert audit.count("command `printf") >= 2 and audit.count("[REDACTED:") >= 2 * 20
    hits = {
        table: [s for s in SECRETS if any(form in text for form in _quoted_forms(s))]
        for table, text in (("events", events), ("audit", audit))
    }
    assert hits == {"events": [], "audit": []}
