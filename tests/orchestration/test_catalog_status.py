"""The built-in catalog's workers report a structured status (``output_schema:
status`` in engineer and tester) on the real Claude Code CLI and the scripted
model: the demo's crew (the built-in ``orchestrate`` scenario on the built-in
templates) ends with each worker's ``{status, summary}`` on its row and in the
orchestrator's ``wait_for_agents`` result, as JSON it can parse."""

from __future__ import annotations

import json

import pytest

from agentdeck.core.asks import Ask
from agentdeck.core.output_schema import BUILTIN
from agentdeck.mockmodel import builtin_scenario_path
from agentdeck.orchestration.templates import resolve
from agentdeck.settings import Settings
from tests.orchestration.conftest import Team
from tests.support.waiting import eventually


def test_the_catalogs_workers_name_the_status_schema(settings: Settings) -> None:
    for name in ("engineer", "tester"):
        found = resolve(settings, name)
        assert found.scope == "built-in" and found.output_schema == BUILTIN["status"], name
        assert "StructuredOutput" in found.prompt, name  # told how, not only refused


@pytest.mark.anyio
@pytest.mark.cli
async def test_the_demos_workers_report_their_status_to_the_orchestrator(team: Team) -> None:
    lead = (await team.lead(str(builtin_scenario_path("orchestrate")))).agent
    tester = await team.child(lead.id, "tester", timeout=90)

    async def question() -> list[Ask] | None:
        return list(await team.orch.inbox.list_questions(agent_id=tester.id)) or None

    (ask,) = await eventually(question, timeout=90, what="the tester's question")
    await team.orch.inbox.answer(ask.id, "Yes, with it.", by="user:test")
    done = await team.settled(lead.id, timeout=180)
    assert done.extra["last_result"].startswith("Done."), done.extra
    final = (await team.tool_results(lead.id, "wait_for_agents"))[-1]
    assert final.startswith("wait_for_agents: done"), final
    reported = [
        json.loads(line.removeprefix("Structured result: "))
        for line in final.splitlines()
        if line.startswith("Structured result: ")
    ]
    assert [r["status"] for r in reported] == ["COMPLETE", "COMPLETE"], final
    for name, file in (("writer", "greet.py"), ("tester", "test_greet.py")):
        worker = await team.settled((await team.child(lead.id, name)).id)
        assert worker.spec.template == name.replace("writer", "engineer")
        assert worker.extra["structured_result"]["status"] == "COMPLETE"
        assert file in worker.extra["structured_result"]["summary"]
        assert not worker.extra.get("last_is_error") and worker.last_error is None
