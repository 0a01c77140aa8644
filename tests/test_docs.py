"""Docs that tests keep honest."""

from __future__ import annotations

import re
from pathlib import Path

from agentdeck.mockmodel import builtin_scenario_names
from agentdeck.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_documented() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text()
    documented = set(re.findall(r"`AGENTDECK_([A-Z_]+)`", doc))
    fields = {name.upper() for name in Settings.model_fields}
    assert fields - documented == set(), "undocumented settings"
    assert documented - fields == set(), "documented settings that do not exist"


def test_every_setting_has_a_description() -> None:
    assert [n for n, f in Settings.model_fields.items() if not f.description] == []


def test_the_settings_page_says_what_the_code_says() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text()
    drifted = [n for n, f in Settings.model_fields.items() if f.description not in doc]
    assert drifted == [], "docs/settings.md and settings.py describe these differently"


def test_the_cli_reference_is_current() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from cli_reference import reference
    finally:
        sys.path.pop(0)
    assert (ROOT / "docs" / "cli.md").read_text() == reference(), (
        "docs/cli.md is stale: run `python scripts/cli_reference.py`"
    )


def test_the_quick_paths_argument_table_is_current() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from cli_reference import SPEC, quick_spec
    finally:
        sys.path.pop(0)
    assert SPEC.read_text() == quick_spec(), (
        "src/agentdeck/cli/quick_spec.py is stale: run `python scripts/cli_reference.py`"
    )


def test_shipped_scenarios_are_documented() -> None:
    names = set(builtin_scenario_names())
    for doc in ("README.md", "docs/scenarios.md"):
        text = (ROOT / doc).read_text()
        assert {n for n in names if f"`{n}`" not in text} == set(), doc


def test_the_quickstart_is_two_make_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_the_layers_the_architecture_shows_are_the_ones_import_linter_holds() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    held = [
        [name.strip().removeprefix("agentdeck.") for name in layer.split("|")]
        for layer in contract["layers"]
    ]
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc.split("<!-- layers -->", 1)[1].split("<!-- /layers -->", 1)[0]
    shown = [
        [name.strip() for name in line.split("  ", 1)[0].split("|")]
        for line in block.strip().strip("`").splitlines()
        if line.strip() and not line.startswith((" ", "`"))
    ]
    assert shown == held
    packages = {p.name for p in (ROOT / "src" / "agentdeck").iterdir() if p.is_dir()}
    packages |= {p.stem for p in (ROOT / "src" / "agentdeck").glob("*.py")}
    outside = {"__init__", "__main__", "__pycache__", "settings", "settings_home", "errors"}
    outside |= {"files", "homedir", "jsontext", "settings_database"}
    outside |= {"settings_bridges", "settings_hosts", "egress"}
    assert sorted(packages - outside) == sorted(n for layer in held for n in layer)
