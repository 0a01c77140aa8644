"""Files for tests that need an agent to ask for approval."""

from __future__ import annotations

from pathlib import Path

import yaml


def ask_profile_and_scenario(tmp_path: Path) -> tuple[str, str]:
    """A profile that asks before any command, and a model that wants ``touch made.txt``
    and then says "Made it."."""
    profile = tmp_path / "ask.yaml"
    profile.write_text(
        yaml.safe_dump({"name": "asks", "default": "ask", "allow": ["Read", "Edit(/**)"]})
    )
    scenario = tmp_path / "touch.yaml"
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    scenario.write_text(
        yaml.safe_dump(
            {"name": "touch", "turns": [{"reply": [touch]}, {"reply": [{"text": "Made it."}]}]}
        )
    )
    return str(profile), str(scenario)
