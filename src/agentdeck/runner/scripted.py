"""The runner's scripted models: one per scenario, started by the first agent that
needs it (those starting meanwhile wait for the same one), stopped with the runner."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdeck.mockmodel import MockModel, Scenario


def scenario_of(ref: str | None) -> Scenario | None:
    """The scenario an agent spec names (a shipped name or a file), if any."""
    if not ref:
        return None
    from agentdeck.mockmodel import builtin_scenario_path, load_scenario

    return load_scenario(builtin_scenario_path(ref))


class ScriptedModels:
    def __init__(self) -> None:
        self._models: dict[str, asyncio.Future[MockModel]] = {}

    def adopt(self, model: MockModel) -> None:
        """A model started before the runner (an embedded run's, ``cli.early``),
        served as the runner's own for its scenarios."""
        for name in (s.name for s in model.scenarios):
            served: asyncio.Future[MockModel] = asyncio.get_running_loop().create_future()
            served.set_result(model)
            self._models.setdefault(name, served)

    async def url(self, scenario: Scenario) -> str:
        """The URL of the scenario's scripted model, started if it is not yet (again
        if its start failed)."""
        starting = self._models.get(scenario.name)
        if starting is None or (starting.done() and starting.exception() is not None):
            starting = self._models[scenario.name] = asyncio.create_task(
                _serve(scenario), name=f"model-{scenario.name}"
            )
        model = await asyncio.shield(starting)
        return model.url_for(scenario.name)

    def started(self) -> dict[str, MockModel]:
        """The scripted models started so far, by scenario."""
        return {
            name: task.result()
            for name, task in self._models.items()
            if task.done() and not task.cancelled() and task.exception() is None
        }

    async def close(self) -> None:
        """Every model stopped, once those still starting are up."""
        for started in self._models.values():
            await asyncio.wait({started})
            if not started.cancelled() and started.exception() is None:
                await started.result().stop()
        self._models.clear()


async def _serve(scenario: Scenario) -> MockModel:
    from agentdeck.mockmodel import MockModel

    model = MockModel([scenario], host="127.0.0.1", port=0)
    await model.start()
    return model
