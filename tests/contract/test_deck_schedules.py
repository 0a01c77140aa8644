"""Schedules the same through either deck: added, listed, shown with their next due
times, paused, resumed, run by hand (a scripted agent starts, owned by the adder, and
the run links to it) and removed; bad values a ``UsageError``, an unknown name
``NotFound``, a taken one ``Refused``; a hostile name refused before anything is
kept; a secret in the prompt scrubbed before it is stored."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.deck import Deck
from agentdeck.core.schedules import CatchUp, Overlap, RunOutcome
from agentdeck.errors import NotFound, Refused, UsageError
from tests.contract.helpers import settled, unique

pytestmark = pytest.mark.anyio

SECRET = "sk-ant-api03-" + "q" * 90


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("project"))


async def test_a_schedule_added_shown_paused_resumed_and_removed(deck: Deck, project: str) -> None:
    name = unique("nightly")
    made = await deck.add_schedule(
        name, "0 9 * * 1-5", prompt="review the open PRs", template="reviewer",
        project=project, tz="Europe/Paris", overlap="queue", catch_up="once", budget_usd=2.5,
    )  # fmt: skip
    assert (made.name, made.cron, made.tz, made.template) == (
        name, "0 9 * * 1-5", "Europe/Paris", "reviewer"
    )  # fmt: skip
    assert made.overlap is Overlap.QUEUE and made.catch_up is CatchUp.ONCE
    assert made.budget_usd == 2.5 and made.created_by == "admin" and not made.paused
    assert made in await deck.schedules()
    view = await deck.schedule(name)
    assert view.schedule == made and view.runs == ()
    assert len(view.upcoming) == 5 and view.upcoming[0] == made.next_at
    paused = await deck.pause_schedule(name)
    assert paused.paused and (await deck.schedule(name)).upcoming == ()
    resumed = await deck.resume_schedule(name)
    assert not resumed.paused
    with pytest.raises(Refused, match="exists"):
        await deck.add_schedule(name, "* * * * *", prompt="p", scenario="chat", project=project)
    await deck.remove_schedule(name)
    assert name not in [s.name for s in await deck.schedules()]
    with pytest.raises(NotFound):
        await deck.schedule(name)


async def test_run_by_hand_starts_its_agent(deck: Deck, project: str) -> None:
    name = unique("hand")
    await deck.add_schedule(name, "0 0 1 1 *", prompt="hello", scenario="chat", project=project)
    run = await deck.run_schedule(name)
    assert run.outcome is RunOutcome.STARTED and run.agent_id, run
    agent = await settled(deck, run.agent_id, lambda a: not a.state.is_live)
    assert agent.state is AgentState.DONE and agent.spec.owner == "admin"
    assert agent.spec.prompt == "hello"
    (kept,) = (await deck.schedule(name)).runs
    assert kept.id == run.id and kept.agent_id == run.agent_id
    assert kept.outcome is RunOutcome.STARTED
    await deck.remove_schedule(name)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("cron", "*/0 * * * *", "cron"),
        ("cron", "0 9 * * 1-5 2026", "cron"),
        ("tz", "Nowhere/Atlantis", "time zone"),
        ("tz", "/etc/localtime", "time zone"),
        ("overlap", "never", "overlap"),
        ("catch_up", "twice", "catch-up"),
        ("budget_usd", -1.0, "budget"),
        ("template", "no-such-template", "unknown agent template"),
        ("prompt", " ", "prompt"),
    ],
)
async def test_bad_values_are_a_usage_error(
    deck: Deck, project: str, field: str, value: object, match: str
) -> None:
    args: dict[str, object] = {"cron": "* * * * *", "prompt": "p", "scenario": "chat"}
    args[field] = value
    name = unique("bad")
    with pytest.raises(UsageError, match=match):
        await deck.add_schedule(name, project=project, **args)  # type: ignore[arg-type]
    assert name not in [s.name for s in await deck.schedules()]


@pytest.mark.parametrize("name", ["../etc", "a/b", "x\x1b[2J", "Upper", "a\nb", "é", "a" * 64])
async def test_hostile_names_are_refused(deck: Deck, project: str, name: str) -> None:
    with pytest.raises(UsageError, match="schedule name"):
        await deck.add_schedule(name, "* * * * *", prompt="p", scenario="chat", project=project)
    for call in (deck.schedule, deck.pause_schedule, deck.run_schedule, deck.remove_schedule):
        with pytest.raises((UsageError, NotFound)):
            await call(name)


async def test_unknown_names_are_not_found(deck: Deck) -> None:
    name = unique("none")
    for call in (
        deck.schedule, deck.pause_schedule, deck.resume_schedule, deck.run_schedule,
        deck.remove_schedule,
    ):  # fmt: skip
        with pytest.raises(NotFound):
            await call(name)


async def test_a_secret_in_the_prompt_is_scrubbed(deck: Deck, project: str) -> None:
    name = unique("secret")
    made = await deck.add_schedule(
        name, "0 9 * * *", prompt=f"deploy with {SECRET}", scenario="chat", project=project
    )
    assert SECRET not in made.prompt
    assert SECRET not in (await deck.schedule(name)).schedule.prompt
    await deck.remove_schedule(name)
