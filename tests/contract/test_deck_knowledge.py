"""The Deck interface's knowledge part, the same suite on both implementations
(``conftest``: the daemon's Deck in this process, ``RemoteDeck`` over a real
daemon's API): agent templates, the policy's check, memory an agent's turn leaves,
usage and budgets; the same records back and the same error classes, hostile input
included. Agents run the real Claude Code CLI against the scripted model."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.core.knowledge import PolicyCheck, TemplateCatalog
from agentdeck.core.memory import MemoryHit, Observation
from agentdeck.core.policy_profile import Decision
from agentdeck.core.templates import Template
from agentdeck.core.usage import Bucket, Budget, BudgetScope, UsageGroup, UsageReport
from agentdeck.errors import AgentdeckError, NotFound, PolicyError, UsageError
from tests.contract.helpers import SETTLE_SECONDS, idle_after, settled, unique
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

Call = Callable[[], Awaitable[object]]
HOUR = 3600.0


async def refused(call: Call, error: type[AgentdeckError]) -> AgentdeckError:
    with pytest.raises(error) as raised:
        await call()
    return raised.value


# -- templates ------------------------------------------------------------------------


def write_template(project: Path, name: str, prompt: str, **keys: str) -> Path:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    front = "\n".join(f"{k}: {v}" for k, v in {"name": name, "description": "x", **keys}.items())
    file = agents / f"{name}.md"
    file.write_text(f"---\n{front}\n---\n{prompt}\n")
    return file


async def test_a_template_on_disk_is_listed_and_shown(deck: Deck, tmp_path: Path) -> None:
    project = tmp_path / "project"
    file = write_template(project, "auditor", "PROJECT-AUDITOR prompt", tools="Read, Edit")
    (project / ".claude" / "agents" / "broken.md").write_text("---\nname: Broken_Name\n---\nx\n")

    found = await deck.templates(str(project))
    assert isinstance(found, TemplateCatalog)
    names = [t.name for t in found.templates]
    assert names == sorted(names) and "auditor" in names and "orchestrator" in names
    [invalid] = found.invalid
    assert "broken.md" in invalid

    one = await deck.template("auditor", str(project))
    assert isinstance(one, Template)
    assert one == next(t for t in found.templates if t.name == "auditor")
    assert (one.scope, one.source, one.tools) == ("project", str(file), ("Read", "Edit"))
    assert one.prompt.strip() == "PROJECT-AUDITOR prompt"
    # Without the project, only the catalog's (and the user's) are seen.
    assert "auditor" not in [t.name for t in (await deck.templates()).templates]


async def test_an_unknown_or_hostile_template_name_is_not_found(deck: Deck, tmp_path: Path) -> None:
    for name in ("no-such-template", "", "../../etc/passwd", "a/b", "nul\x00name", "x" * 5000):
        await refused(lambda n=name: deck.template(n), NotFound)  # type: ignore[misc]
    # A file that does not load is its error, never a fall-back to another scope.
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "tester.md").write_text("---\nname: tester\n---\n")
    await refused(lambda: deck.template("tester", str(project)), AgentdeckError)


async def test_a_template_project_is_an_absolute_directory(deck: Deck) -> None:
    for project in ("relative/dir", "/tmp/nul\x00dir"):
        await refused(lambda p=project: deck.templates(p), UsageError)  # type: ignore[misc]
        await refused(lambda p=project: deck.template("tester", p), UsageError)  # type: ignore[misc]


# -- the policy -----------------------------------------------------------------------


async def test_a_policy_check_says_the_decision_and_the_rule_that_made_it(
    deck: Deck, tmp_path: Path
) -> None:
    work, home = str(tmp_path / "work"), str(tmp_path / "home")

    async def check(tool: str, tool_input: dict[str, str]) -> PolicyCheck:
        return await deck.policy_check(tool, tool_input, profile="default", cwd=work, home=home)

    allowed = await check("Bash", {"command": "git status"})
    assert isinstance(allowed, PolicyCheck)
    assert (allowed.decision, allowed.rule) == (Decision.ALLOW, "Bash(git status:*)")
    assert (allowed.profile, allowed.source) == ("default", "profile:default")
    assert "allowed" in allowed.reason and allowed.sandbox_summary
    assert {"mode", "required", "filesystem", "network"} <= set(allowed.sandbox)

    denied = await check("Bash", {"command": "sudo rm -rf build"})
    assert (denied.decision, denied.rule) == (Decision.DENY, "Bash(sudo:*)")
    assert "denied" in denied.reason

    asked = await check("Bash", {"command": "make deploy"})
    assert (asked.decision, asked.rule) == (Decision.ASK, None)
    assert "defaults to ask" in asked.reason

    # A secret under the home the caller names.
    secret = await check("Read", {"file_path": f"{home}/.ssh/id_rsa"})
    assert secret.decision is Decision.DENY


async def test_policy_profiles_are_the_built_in_ones(deck: Deck) -> None:
    found = await deck.policy_profiles()
    assert [p.name for p in found] == ["default", "permissive", "strict"]
    assert {p.name: p.default for p in found}["default"] is Decision.ASK
    assert all(p.description for p in found)


async def test_a_bad_policy_check_is_refused(deck: Deck, tmp_path: Path) -> None:
    await refused(lambda: deck.policy_check(""), UsageError)
    await refused(lambda: deck.policy_check("Ba\x00sh"), UsageError)
    await refused(lambda: deck.policy_check("Bash", cwd="relative"), UsageError)
    await refused(lambda: deck.policy_check("Bash", home="~"), UsageError)
    # A profile is a built-in's name: the deck reads no file for a caller.
    secret = tmp_path / "profile.yaml"
    secret.write_text("name: mine\ndefault: allow\n")
    for profile in (str(secret), "../../etc/passwd", "no-such-profile"):
        error = await refused(
            lambda p=profile: deck.policy_check("Bash", profile=p),  # type: ignore[misc]
            PolicyError,
        )
        assert "not a built-in profile" in error.message


# -- memory ---------------------------------------------------------------------------


async def test_an_agents_turn_is_remembered_searched_shown_and_forgotten(deck: Deck) -> None:
    agent = await deck.create_agent(
        AgentSpec(
            prompt="fix the test",
            name=unique("fixer"),
            scenario="fix-test",
            allow=("Bash(python3:*)",),
        )  # fmt: skip
    )
    done = await settled(deck, agent.id, idle_after(1))
    project = done.cwd

    async def remembered() -> list[MemoryHit] | None:
        hits = await deck.memory_search("calc", project=project, limit=20)
        return hits if len({h.kind for h in hits}) == 2 else None  # tool calls and the summary

    hits = await eventually(remembered, timeout=SETTLE_SECONDS, what="the turn remembered")
    assert all(isinstance(h, MemoryHit) for h in hits)
    assert {h.project for h in hits} == {project}
    assert {h.session_id for h in hits} == {done.session_id}
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert len(await deck.memory_search("calc", project=project, limit=1)) == 1
    assert await deck.memory_search("calc", project="/no/such/project") == []
    assert await deck.memory_search("", project=project) == []

    read = next(h for h in hits if h.title.startswith("Read("))
    record = await deck.memory_record(read.id)
    assert isinstance(record, Observation)
    assert (record.id, record.tool, record.agent_id) == (read.id, "Read", agent.id)
    assert "a - b" in record.output_excerpt
    stats = await deck.memory_stats()
    assert set(stats) == {"observations", "summaries", "projects"} and stats["observations"] >= 4

    assert await deck.forget_memory(memory_id=read.id) == 1
    await refused(lambda: deck.memory_record(read.id), NotFound)
    await refused(lambda: deck.forget_memory(memory_id=read.id), NotFound)
    rest = await deck.forget_memory(session_id=done.session_id)
    assert rest >= len(hits) - 1  # every other record of the turn
    assert await deck.memory_search("calc", project=project) == []
    assert await deck.forget_memory(project=project) == 0
    await deck.kill(agent.id)


async def test_memory_refuses_bad_values_and_unknown_ids(deck: Deck) -> None:
    for memory_id in ("obnope", "", "zz", "ob/../x", "ob\x00", "su" + "0" * 500):
        await refused(lambda m=memory_id: deck.memory_record(m), NotFound)  # type: ignore[misc]
        await refused(
            lambda m=memory_id: deck.forget_memory(memory_id=m),  # type: ignore[misc]
            NotFound,
        )
    for limit in (0, -1, 101):
        await refused(
            lambda n=limit: deck.memory_search("x", limit=n),  # type: ignore[misc]
            UsageError,
        )
    await refused(lambda: deck.memory_search("x", project="relative"), UsageError)
    await refused(lambda: deck.forget_memory(), UsageError)
    await refused(lambda: deck.forget_memory(session_id="  "), UsageError)
    await refused(lambda: deck.forget_memory(memory_id="obx", session_id="s"), UsageError)
    await refused(lambda: deck.forget_memory(project="relative"), UsageError)


@pytest.mark.parametrize(
    "query",
    ['NEAR("flaky" AND', '"', "'", "*", "a OR", "^x", "col:val", "nul\x00byte", "\x00",
     "-", "(((", "[bold]", "\\", "%", "é" * 2000],
    ids=lambda q: repr(q)[:12],
)  # fmt: skip
async def test_a_hostile_query_is_a_clean_answer_or_a_usage_error(deck: Deck, query: str) -> None:
    try:
        found = await deck.memory_search(query, limit=5)
    except UsageError:
        return
    assert isinstance(found, list) and all(isinstance(h, MemoryHit) for h in found)


# -- usage and budgets ----------------------------------------------------------------


async def test_usage_counts_a_turn(deck: Deck) -> None:
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("spend"), scenario="chat")
    )
    await settled(deck, agent.id, idle_after(1))

    async def counted() -> UsageReport | None:
        found = await deck.usage(since_seconds=HOUR, bucket=Bucket.HOUR, by=UsageGroup.USER)
        return found if found.total.results >= 1 else None

    report = await eventually(counted, timeout=SETTLE_SECONDS, what="the turn counted")
    assert (report.bucket, report.by) == (Bucket.HOUR, UsageGroup.USER)
    assert report.total.input_tokens > 0 and report.groups()
    await deck.kill(agent.id)


async def test_usage_refuses_a_bad_period(deck: Deck) -> None:
    for seconds in (0.0, -1.0, 367 * 86_400.0, math.nan, math.inf):
        await refused(
            lambda s=seconds: deck.usage(  # type: ignore[misc]
                since_seconds=s, bucket=Bucket.DAY, by=UsageGroup.NONE
            ),
            UsageError,
        )
    await refused(
        lambda: deck.usage(since_seconds=HOUR, bucket="week", by=UsageGroup.NONE),  # type: ignore[arg-type]
        UsageError,
    )


async def test_a_budget_is_set_listed_and_removed(deck: Deck, tmp_path: Path) -> None:
    user = unique("member")
    set_ = await deck.set_budget(BudgetScope.USER, user, 2.5)
    assert set_ == Budget("user", user, 2.5)
    changed = await deck.set_budget(BudgetScope.USER, f"  {user} ", 0)
    assert changed == Budget("user", user, 0.0)
    project = str(tmp_path)
    await deck.set_budget(BudgetScope.PROJECT, project, 10)
    listed = {(b.scope, b.name): b for b in await deck.budgets()}
    assert listed[("user", user)] == Budget("user", user, 0.0, 0.0)
    assert listed[("project", project)].daily_usd == 10.0

    assert await deck.remove_budget(BudgetScope.USER, user) is None
    assert ("user", user) not in {(b.scope, b.name) for b in await deck.budgets()}
    error = await refused(lambda: deck.remove_budget(BudgetScope.USER, user), NotFound)
    assert "no user budget" in str(error)
    await deck.remove_budget(BudgetScope.PROJECT, project)


async def test_a_bad_budget_is_refused_and_changes_nothing(deck: Deck) -> None:
    before = await deck.budgets()
    for scope, name, usd in (
        (BudgetScope.USER, "a", -1.0),
        (BudgetScope.USER, "a", math.nan),
        (BudgetScope.USER, "a", math.inf),
        (BudgetScope.USER, "", 1.0),
        (BudgetScope.USER, "   ", 1.0),
        (BudgetScope.USER, "nul\x00name", 1.0),
        ("team", "a", 1.0),
    ):
        await refused(
            lambda s=scope, n=name, u=usd: deck.set_budget(s, n, u),  # type: ignore[misc]
            UsageError,
        )
    await refused(lambda: deck.remove_budget("team", "a"), UsageError)  # type: ignore[arg-type]
    assert await deck.budgets() == before
