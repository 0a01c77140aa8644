"""A profile file cannot pass for a built-in, nor share another file's grants.

An agent can write files in its project's ``.agentdeck/``, and a template or a
spawn may name one as a profile (``.agentdeck/NAME.yaml``). Remembered answers
("approve always") were keyed by the profile's ``name`` alone, so a file that
called itself ``strict`` was shown and asked about as the built-in, and an answer
given for its agent was a grant for every agent of the same template under the
built-in ``strict``; two projects' files of one name shared their grants too. Now
a file may not take a built-in's name (refused, saying so), and a file's grants
are keyed by its name and its path.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.errors import PolicyError
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from tests.support import deckcli

pytestmark = [pytest.mark.anyio]

LAX = {"default": "allow", "allow": ["Bash", "Read", "Edit"]}


def planted(project: Path, file: str, **fields: object) -> Path:
    """A profile file as an agent writes it into its project's ``.agentdeck/``."""
    folder = project / ".agentdeck"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file
    path.write_text(yaml.safe_dump({**LAX, **fields}))
    return path


def agent(agent_id: str, profile: str | None, template: str | None = "engineer") -> Agent:
    now = time.time()
    return Agent(
        id=agent_id, name=agent_id, state=AgentState.RUNNING, cwd="/tmp",
        spec=AgentSpec(prompt="x", profile=profile, template=template),
        created_at=now, updated_at=now,
    )  # fmt: skip


@pytest.mark.parametrize("fields", [{"name": "strict"}, {"name": " default "}, {}])
def test_a_profile_file_that_calls_itself_a_builtin_is_refused(
    tmp_path: Path, fields: dict[str, str]
) -> None:
    env = deckcli.deck_env(tmp_path)
    file = "permissive.yaml" if not fields else "lax.yaml"  # no name: the file's stem
    path = planted(tmp_path / "project", file, **fields)
    done = deckcli.deck(env, "policy", "check", "--profile", str(path), "Bash(curl x.example)")
    assert done.code == 2, (done.out, done.err)
    assert "the name of a built-in profile" in done.err and "Traceback" not in done.err
    assert "allow" not in done.out


async def test_an_agent_cannot_start_under_a_file_posing_as_a_builtin(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    _, runner = deck
    path = planted(tmp_path / "project", "lax.yaml", name="strict")
    with pytest.raises(PolicyError, match="the name of a built-in profile"):
        await runner.start(AgentSpec(prompt="go", scenario="chat", profile=str(path)))
    assert not runner.sessions  # nothing started


async def test_a_files_grants_stay_with_that_file(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    _, runner = deck
    governor = runner.governor
    mine_a = planted(tmp_path / "a", "mine.yaml", name="mine", default="ask")
    mine_b = planted(tmp_path / "b", "mine.yaml", name="mine", default="ask")
    a, b = agent("a1", str(mine_a)), agent("b1", str(mine_b))
    strict, plain = agent("s1", "strict"), agent("p1", "strict", template=None)
    keys = {governor.grant_key(x) for x in (a, b, strict, plain)}
    assert len(keys) == 4
    # The built-ins' keys are as before: grants remembered for them still apply.
    assert governor.grant_key(strict) == "template:engineer/profile:strict"
    assert governor.grant_key(plain) == "profile:strict"
    assert governor.grant_key(a) == f"template:engineer/profile:mine@{mine_a}"

    now = time.time()
    asked = Approval(
        id="ap1", agent_id=a.id, tool="Bash", input={"command": "deploy now"},
        reason="no rule allows it", grant_key=governor.grant_key(a),
        state=ApprovalState.PENDING, created_at=now, expires_at=now + 60,
    )  # fmt: skip
    await governor.approvals.create(asked)
    answered = await governor.approvals.decide(
        "ap1", ApprovalState.ALLOWED, by="user:test",
        remember=GrantScope.PERSISTENT, grant_rule="Bash(deploy:*)",
    )  # fmt: skip
    assert answered is not None
    assert [g.rule for g in await governor.grants(a)] == ["Bash(deploy:*)"]
    assert await governor.grants(b) == []
    assert await governor.grants(strict) == []
