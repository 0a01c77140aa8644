"""The approval inbox through the API, with a real agent waiting on it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_an_ask_answered_through_the_api_lets_the_tool_run(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    profile, scenario = ask_profile_and_scenario(tmp_path)
    created = await api.post(
        "/api/agents", json={"prompt": "make it", "scenario": scenario, "profile": profile}
    )
    assert created.status_code == 201, created.text
    agent_id = created.json()["id"]

    async def pending() -> list[dict[str, object]]:
        return (await api.get("/api/approvals")).json()["approvals"]

    (approval,) = await eventually(pending, timeout=30, what="a pending approval")
    assert approval["agent_id"] == agent_id and approval["tool"] == "Bash"

    async def waiting() -> bool:
        agent = (await api.get(f"/api/agents/{agent_id}")).json()
        return agent["state"] == "awaiting_permission"

    await eventually(waiting, timeout=10, what="the board to show the agent waiting")

    bad = await api.post(f"/api/approvals/{approval['id']}", json={"decision": "maybe"})
    assert bad.status_code == 422 and "decision" in bad.json()["error"]["message"]
    answered = await api.post(
        f"/api/approvals/{approval['id']}", json={"decision": "allow", "message": "go ahead"}
    )
    assert answered.status_code == 200 and answered.json()["state"] == "allowed"
    assert answered.json()["answered_by"] == "user:api:admin"

    async def idle() -> bool:
        return (await api.get(f"/api/agents/{agent_id}")).json()["state"] == "idle"

    await eventually(idle, timeout=30, what="the agent to finish its turn")
    cwd = Path((await api.get(f"/api/agents/{agent_id}")).json()["cwd"])
    assert (cwd / "made.txt").exists()
    again = await api.post(f"/api/approvals/{approval['id']}", json={"decision": "deny"})
    assert again.status_code == 409
    assert (await api.get("/api/approvals/nope")).status_code == 404


async def test_policy_check_through_the_api(api: httpx.AsyncClient) -> None:
    r = await api.post(
        "/api/policy/check",
        json={"tool": "Bash", "input": {"command": "git status; rm -rf ~"}, "cwd": "/tmp"},
    )
    assert r.status_code == 200
    assert r.json()["decision"] == "deny" and r.json()["reason"]
    bad = await api.post("/api/policy/check", json={"tool": "Bash", "profile": "nope"})
    assert bad.status_code == 422 and "nope" in bad.json()["error"]["message"]


async def test_policy_check_reads_no_file_and_takes_the_callers_home(
    api: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A profile is a built-in's name: a path would have the daemon read any file its
    user can, for any viewer. ``home`` is the ``~`` the caller's rules mean."""
    (tmp_path / "p.yaml").write_text("name: mine\n")
    for profile in (str(tmp_path / "p.yaml"), "/etc/passwd", "../x.json"):
        r = await api.post("/api/policy/check", json={"tool": "Bash", "profile": profile})
        assert r.status_code == 422, r.text
        assert "not a built-in profile" in r.json()["error"]["message"]
    secret = {"file_path": str(tmp_path / ".ssh" / "id_rsa")}
    mine = await api.post(
        "/api/policy/check",
        json={"tool": "Read", "input": secret, "home": str(tmp_path), "cwd": "/tmp"},
    )
    theirs = await api.post(
        "/api/policy/check", json={"tool": "Read", "input": secret, "cwd": "/tmp"}
    )
    assert mine.json()["decision"] == "deny", mine.json()
    assert theirs.json()["decision"] != "deny", theirs.json()
    for field in ("cwd", "home"):  # a relative path cannot be judged: refused, named
        r = await api.post("/api/policy/check", json={"tool": "Read", field: "x/y"})
        assert r.status_code == 422 and field in r.text, r.text
    assert mine.json()["profile_source"] == "default.yaml"
    assert mine.json()["sandbox_summary"] and mine.json()["source"] == "profile:default"
