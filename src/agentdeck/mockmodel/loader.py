"""Reading scenario files: from a path, or by the name of a shipped scenario."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import yaml

from agentdeck.core.quoting import scrubbed
from agentdeck.errors import ScenarioError
from agentdeck.mockmodel.scenario import VOCABULARY, Scenario, parse_scenario


def _scenario_dir() -> Path:
    # The package is installed as plain files (hatch wheel / editable), so the
    # resource directory is a real directory we can hand out paths into.
    return Path(str(importlib.resources.files("agentdeck.mockmodel") / "scenarios"))


def builtin_scenario_names() -> list[str]:
    """Names of the scenarios shipped with agentdeck, sorted."""
    return sorted(p.stem for p in _scenario_dir().glob("*.yaml"))


def builtin_scenario_path(name: str) -> Path:
    """The file of a shipped scenario; an existing file path is returned as is."""
    candidate = Path(name)
    if candidate.is_file():
        return candidate
    path = _scenario_dir() / f"{name}.yaml"
    if "/" in name or not path.is_file():
        available = ", ".join(builtin_scenario_names())
        raise ScenarioError(
            name, f"no such scenario file or built-in scenario (built-in: {available})"
        )
    return path


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file (a path or a built-in name)."""
    resolved = builtin_scenario_path(str(path))
    file = str(resolved)
    try:
        text = resolved.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(file, f"cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # Where, never what: yaml's own message quotes the file.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(file, f"invalid YAML{where}") from None
    try:
        return parse_scenario(data, file, default_name=resolved.stem)
    except ScenarioError as exc:
        # Whoever named the file may not be able to read it: never what it holds.
        problem = scrubbed(exc.problem, text, VOCABULARY)
        raise ScenarioError(exc.file, problem, turn=exc.turn) from None


def write_workspace(scenario: Scenario, directory: str | Path) -> Path:
    """Write the scenario's ``workspace.files`` into ``directory`` (created if needed)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in scenario.workspace_files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return root
