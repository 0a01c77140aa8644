"""Webhook triggers as GitHub reaches them: ``agentdeck trigger add`` in a subprocess,
then real HMAC-signed ``POST /hooks/NAME`` deliveries (GitHub's push, pull_request
and issues payloads) to a real daemon, each starting an agent of the template on the
scripted model (scenario ``chat``) with the rendered prompt; the trigger survives a
restart of the daemon, its deliveries are kept scrubbed, ``trigger rm`` ends it."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.triggers import sign
from agentdeck.settings import Settings
from tests.support.deckcli import Done, deck, deck_env
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

GITHUB = Path(__file__).parent.parent / "fixtures" / "github"
SECRET = b"s3cret-shared-with-github-0123456789"


def secret_file(tmp_path: Path, secret: bytes = SECRET) -> Path:
    path = tmp_path / "hook.secret"
    path.write_bytes(secret + b"\n")
    path.chmod(0o600)
    return path


async def cli(env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(deck, env, *args)


async def add_trigger(
    tmp_path: Path, name: str, prompt: str, *, rate: str = "10/min", secret: Path | None = None
) -> Done:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    done = await cli(
        deck_env(tmp_path),
        "trigger", "add", name,
        "--agent", "reviewer",
        "--prompt-template", prompt,
        "--secret-file", str(secret or secret_file(tmp_path)),
        "--rate", rate,
        "--project", str(project),
        "--scenario", "chat",
    )  # fmt: skip
    return done


def payload(kind: str) -> bytes:
    return (GITHUB / f"{kind}.json").read_bytes()


async def deliver(
    served: Served,
    name: str,
    body: bytes,
    *,
    event: str,
    delivery: str | None = None,
    secret: bytes = SECRET,
    signature: str | None = None,
) -> httpx.Response:
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature if signature is not None else sign(secret, body),
        "User-Agent": "GitHub-Hookshot/test",
    }
    async with httpx.AsyncClient(base_url=served.info.url, timeout=60) as client:
        return await client.post(f"/hooks/{name}", content=body, headers=headers)


async def agent(served: Served, ref: str) -> dict[str, Any]:
    async with served.api() as api:
        response = await api.get(f"/api/agents/{ref}")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data


async def answered(served: Served, ref: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await agent(served, ref)
        return found if not AgentState(found["state"]).is_busy and found["turns"] > 0 else None

    return await eventually(probe, timeout=120, what=f"agent {ref} to answer")


async def test_signed_github_deliveries_start_agents_with_the_rendered_prompt(
    settings: Settings, tmp_path: Path
) -> None:
    template = (
        "{% if event == 'pull_request' %}Review {{ payload.pull_request.html_url }}"
        "{% elif event == 'push' %}Check {{ payload.after[:12] }} on {{ payload.ref }}"
        "{% else %}Triage issue #{{ payload.issue.number }}: {{ payload.issue.title }}{% endif %}"
    )
    added = await add_trigger(tmp_path, "gh", template)
    assert added.code == 0, added.err
    async with serving(settings) as served:
        prompts = {}
        for kind, want in (
            ("pull_request", "Review https://github.com/octo-org/widgets/pull/42"),
            ("push", "Check 6dcb09b5b578 on refs/heads/main"),
            ("issues", "Triage issue #77: Crash when the config file is empty"),
        ):
            r = await deliver(served, "gh", payload(kind), event=kind)
            assert r.status_code == 202, r.text
            started = await answered(served, r.json()["agent"])
            assert started["spec"]["template"] == "reviewer"
            prompts[kind] = started["spec"]["prompt"]
            assert prompts[kind] == want
    shown = await cli(deck_env(tmp_path), "trigger", "show", "gh", "--json")
    assert shown.code == 0, shown.err
    data = shown.json()
    assert {d["event"] for d in data["deliveries"]} == {"pull_request", "push", "issues"}
    assert all(d["status"] == 202 and d["agent_id"] for d in data["deliveries"])
    issue = next(d for d in data["deliveries"] if d["event"] == "issues")
    kept = json.loads(issue["payload"])
    assert kept["issue"]["number"] == 77
    assert "ghp_R4nd0m" not in issue["payload"] and "[REDACTED" in issue["payload"]
    assert SECRET.decode() not in shown.out  # only the path and a fingerprint
    assert data["secret_fingerprint"] and data["secret_file"].endswith("hook.secret")


async def test_a_trigger_survives_a_restart_and_its_replay_guard_too(
    settings: Settings, tmp_path: Path
) -> None:
    assert (await add_trigger(tmp_path, "pr", "Review {{ payload.number }}")).code == 0
    body = payload("pull_request")
    async with serving(settings) as served:
        first = await deliver(served, "pr", body, event="pull_request", delivery="d-1")
        assert first.status_code == 202, first.text
        await answered(served, first.json()["agent"])
    async with serving(settings) as served:
        again = await deliver(served, "pr", body, event="pull_request", delivery="d-1")
        assert again.status_code == 409, again.text
        fresh = await deliver(served, "pr", body, event="pull_request", delivery="d-2")
        assert fresh.status_code == 202, fresh.text
        assert (await answered(served, fresh.json()["agent"]))["spec"]["prompt"] == "Review 42"
        removed = await cli(deck_env(tmp_path), "trigger", "rm", "pr")
        assert removed.code == 0, removed.err
        gone = await deliver(served, "pr", body, event="pull_request", delivery="d-3")
        # A removed trigger answers as a bad signature would: nothing to enumerate.
        assert gone.status_code == 401, gone.text


async def test_the_cli_refuses_bad_triggers_and_lists_good_ones(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    loose = tmp_path / "loose.secret"
    loose.write_bytes(SECRET)
    loose.chmod(0o644)
    refused = await add_trigger(tmp_path, "a", "Hi {{ payload.x }}", secret=loose)
    assert refused.code != 0 and "readable by others" in refused.err
    short = tmp_path / "short.secret"
    short.write_bytes(b"tiny")
    short.chmod(0o600)
    assert "16 bytes" in (await add_trigger(tmp_path, "a", "x", secret=short)).err
    assert "bad prompt template" in (await add_trigger(tmp_path, "a", "{{ oops ")).err
    assert "bad rate" in (await add_trigger(tmp_path, "a", "x", rate="lots")).err
    assert "bad trigger name" in (await add_trigger(tmp_path, "../x", "x")).err
    assert (await add_trigger(tmp_path, "ok", "Review {{ payload.number }}")).code == 0
    twice = await add_trigger(tmp_path, "ok", "again")
    assert twice.code != 0 and "exists" in twice.err
    listed = await cli(env, "trigger", "ls", "--json")
    assert [t["name"] for t in listed.json()] == ["ok"]
    assert SECRET.decode() not in listed.out
    missing = await cli(env, "trigger", "show", "nope")
    assert missing.code != 0 and "nope" in missing.err
