"""The audit log and the approval name who answered: the user behind the token and
the channel (``user:<channel>:<user>``), for answers through the API, the CLI and
the dashboard, each with a real agent waiting on the answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from agentdeck.core.roles import Role
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env
from tests.support.governance import ask_profile_and_scenario
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def _pending_approval(served: Served, tmp_path: Path) -> tuple[str, str]:
    profile, scenario = ask_profile_and_scenario(tmp_path)
    async with served.api() as admin:
        created = await admin.post(
            "/api/agents", json={"prompt": "make it", "scenario": scenario, "profile": profile}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]

        async def pending() -> list[dict[str, object]]:
            return (await admin.get("/api/approvals")).json()["approvals"]

        (approval,) = await eventually(pending, timeout=60, what="a pending approval")
    return agent_id, str(approval["id"])


async def _answer(served: Served, how: str, approval_id: str, alice: str, tmp_path: Path) -> None:
    url = served.info.url
    if how == "api":
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {alice}"}, timeout=30
        ) as client:
            r = await client.post(f"/api/approvals/{approval_id}", json={"decision": "allow"})
            assert r.status_code == 200, r.text
    elif how == "cli":  # the CLI speaks with the home's token: the first admin's
        done = await asyncio.to_thread(deck, deck_env(tmp_path), "approve", approval_id)
        assert done.code == 0, done.err
    else:
        async with httpx.AsyncClient(base_url=url, timeout=30) as browser:
            r = await browser.post("/login", data={"token": alice}, headers={"origin": url})
            assert r.status_code == 303, r.text
            r = await browser.post(
                f"/ui/approvals/{approval_id}", data={"answer": "allow"}, headers={"origin": url}
            )
            assert r.status_code in (200, 303), r.text


@pytest.mark.parametrize(
    ("how", "actor"),
    [("api", "user:api:alice"), ("cli", "user:cli:admin"), ("web", "user:web:alice")],
)
async def test_the_audit_log_names_who_approved(
    settings: Settings, tmp_path: Path, how: str, actor: str
) -> None:
    async with serving(settings) as served:
        await served.deck.identity.add_user("alice", Role.OPERATOR)
        _, alice = await served.deck.identity.create_token("alice", name="test")
        agent_id, approval_id = await _pending_approval(served, tmp_path)
        await _answer(served, how, approval_id, alice, tmp_path)
        approval = await served.deck.approval(approval_id)
        assert approval.answered_by == actor

        async def audited() -> list[object]:
            entries = await served.deck._store.read_audit(agent_id=agent_id)
            return [e for e in entries if e.answered_by == actor]

        (entry,) = await eventually(audited, timeout=60, what=f"an audit entry by {actor}")
        assert entry.tool == "Bash" and str(entry.decision) == "allowed"
        events = await served.deck.events(agent_id=agent_id, limit=10_000)
        resolved = [e.data for e in events if e.type == "permission_resolved"]
        assert [d.get("by") for d in resolved if d.get("request_id") == approval_id] == [actor]


async def test_acts_on_agents_name_their_user(settings: Settings) -> None:
    """Starting an agent through the API or the dashboard is audited as the user's
    act (a digest of what was sent, never the text)."""
    async with serving(settings) as served:
        await served.deck.identity.add_user("alice", Role.OPERATOR)
        _, alice = await served.deck.identity.create_token("alice", name="test")
        url = served.info.url
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {alice}"}, timeout=60
        ) as api:
            r = await api.post("/api/agents", json={"prompt": "SECRET-PROMPT", "scenario": "chat"})
            assert r.status_code == 201, r.text
            by_api = r.json()["id"]
        async with httpx.AsyncClient(base_url=url, timeout=60) as browser:
            r = await browser.post("/login", data={"token": alice}, headers={"origin": url})
            assert r.status_code == 303
            r = await browser.post(
                "/ui/agents",
                data={"prompt": "SECRET-PROMPT", "scenario": "chat"},
                headers={"origin": url},
            )
            assert r.status_code == 303, r.text
            by_web = r.headers["location"].rsplit("/", 1)[-1]
        audit = await served.deck._store.read_audit(limit=1000)
        acts = {(e.agent_id, e.tool, e.answered_by) for e in audit}
        assert (by_api, "act:start", "user:api:alice") in acts
        assert (by_web, "act:start", "user:web:alice") in acts
        assert all("SECRET-PROMPT" not in str(e) for e in audit)
