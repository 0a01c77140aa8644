"""What the Deck knows by name: profiles, scenarios, the deck's
orchestrator tools for hand-started sessions, uploads into a workspace."""

from __future__ import annotations

from pathlib import Path

from agentdeck.core.policy_profile import Profile
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.daemon.home import read_token
from agentdeck.daemon.uploads import save_upload


class Lookups(DeckParts):
    def profile(self, name: str | None = None) -> Profile:
        """A policy profile as agents get it (the deck's secrets denied); default:
        the deck's own."""
        return self._runner.governor.profile_named(name)

    @staticmethod
    def profile_names() -> list[str]:
        """The built-in policy profiles, sorted."""
        from agentdeck.governance.profiles import builtin_profile_names

        return builtin_profile_names()

    @staticmethod
    def project_file(ref: str, project: str | None) -> Path:
        """The file a ``.agentdeck/NAME`` reference names in ``project`` (``ValueError``
        says what is wrong with it: no links, no other place)."""
        from agentdeck.governance.profiles import in_project

        return in_project(ref, project)

    @staticmethod
    def scenario_names() -> list[str]:
        """The scripted model's built-in scenarios, sorted."""
        from agentdeck.mockmodel.loader import builtin_scenario_names

        return builtin_scenario_names()

    def owner_token(self) -> str | None:
        """The token file's token: the deck's own user's (the CLI's)."""
        return read_token(self.settings)

    async def upload(self, ref: str, name: str, data: bytes) -> str:
        """Save ``data`` under uploads/ in the agent's workspace (a taken name gets a
        number); the path it got, relative to the workspace."""
        agent = await self._store.find_agent(ref)
        return str(save_upload(Path(agent.cwd), name, data))
