"""The repository as a Claude Code marketplace: its manifests pass the bundled CLI's
own validator, the plugin carries agentdeck's hooks as ``hooks install`` writes them,
the agent catalog and the built-in skills as they are in the package, and its
launchers find the deck's home and agentdeck's hook client."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import agentdeck
from agentdeck.hooks.config import HOOK_EVENTS
from agentdeck.hooks.install import CLAUDE_TIMEOUT_SECONDS, TOOL_EVENTS, client_path
from agentdeck.hooks.merge import MARKER
from tests.plugin.support import (
    PLUGIN,
    REPO,
    SCRIPTS,
    claude,
    claude_env,
    launch,
    manifest,
)

CATALOG = REPO / "src" / "agentdeck" / "orchestration" / "catalog"
BUILTIN_SKILLS = REPO / "src" / "agentdeck" / "runner" / "builtin_skills" / "agentdeck" / "skills"
# The orchestrator template works through the deck's own tools (mcp__deck__*), which
# only agents agentdeck runs have: a Claude Code subagent of that name could not.
NOT_A_SUBAGENT = {"orchestrator.md"}


@pytest.mark.parametrize("target", [REPO, PLUGIN], ids=["marketplace", "plugin"])
def test_the_bundled_cli_validates_it_strictly(target: Path, tmp_path: Path) -> None:
    done = claude(
        claude_env(tmp_path), "plugin", "validate", "--strict", "--json", str(target), cwd=tmp_path
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["success"], done.stdout + done.stderr
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []


def test_the_marketplace_offers_the_plugin_under_the_name_the_readme_installs() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "agentdeck"  # `claude plugin install agentdeck@agentdeck`
    (entry,) = market["plugins"]
    assert entry["name"] == "agentdeck" and (REPO / entry["source"]).resolve() == PLUGIN


def test_the_plugin_version_is_agentdecks() -> None:
    assert manifest(".claude-plugin", "plugin.json")["version"] == agentdeck.__version__


def test_the_hooks_are_the_events_and_timeout_hooks_install_writes() -> None:
    hooks = manifest("hooks", "hooks.json")["hooks"]
    assert list(hooks) == list(HOOK_EVENTS)
    for event, groups in hooks.items():
        (group,) = groups
        assert group.get("matcher") == ("*" if event in TOOL_EVENTS else None)
        (hook,) = group["hooks"]
        assert hook == {
            "type": "command",
            "command": '"${CLAUDE_PLUGIN_ROOT}/scripts/agentdeck-hook"',
            "timeout": CLAUDE_TIMEOUT_SECONDS,
        }


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_agents_are_the_catalogs_templates() -> None:
    """A copy (an installed plugin reads no link out of its folder), kept equal here."""
    catalog = {k: v for k, v in _files(CATALOG).items() if k not in NOT_A_SUBAGENT}
    assert _files(PLUGIN / "agents") == catalog, (
        "the plugin's agents differ from the catalog: cp "
        "src/agentdeck/orchestration/catalog/*.md plugin/agentdeck/agents/ && "
        "rm plugin/agentdeck/agents/orchestrator.md"
    )


def test_the_skills_are_the_builtin_skills_the_templates_name() -> None:
    """The templates' ``skills: [agentdeck:run-tests, ...]`` are this plugin's skills."""
    assert _files(PLUGIN / "skills") == _files(BUILTIN_SKILLS), (
        "the plugin's skills differ from the built-in ones: rm -r plugin/agentdeck/skills && "
        "cp -r src/agentdeck/runner/builtin_skills/agentdeck/skills plugin/agentdeck/"
    )
    for path in (BUILTIN_SKILLS).rglob("*.sh"):
        copy = PLUGIN / "skills" / path.relative_to(BUILTIN_SKILLS)
        assert os.access(copy, os.X_OK) == os.access(path, os.X_OK)


def test_the_launchers_are_executable() -> None:
    for name in ("agentdeck-hook", "agentdeck-mcp"):
        assert (SCRIPTS / name).stat().st_mode & stat.S_IXUSR, name


# --- the launchers ---------------------------------------------------------------


def _home(env: dict[str, str]) -> str:
    """What the launchers take as the deck's home under ``env``."""
    import subprocess

    done = subprocess.run(
        ["/bin/sh", "-c", '. "$1"; printf %s "$deck_home"', "sh", str(SCRIPTS / "agentdeck-find")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("given", "home"),
    [
        ({}, "/u/.agentdeck"),
        ({"AGENTDECK_HOME": "/deck"}, "/deck"),
        ({"AGENTDECK_HOME": "/deck", "CLAUDE_PLUGIN_OPTION_HOME": "/opt"}, "/opt"),
        ({"AGENTDECK_HOME": "/deck", "AGENTDECK_PLUGIN_HOME": "/mcp"}, "/mcp"),
        # an unset option: Claude Code may leave .mcp.json's placeholder as it is
        ({"AGENTDECK_HOME": "/deck", "AGENTDECK_PLUGIN_HOME": "${user_config.home}"}, "/deck"),
        ({"CLAUDE_PLUGIN_OPTION_HOME": "~/decks/a"}, "/u/decks/a"),
        ({"CLAUDE_PLUGIN_OPTION_HOME": "~"}, "/u"),
        # relative to which directory? none: refused
        ({"CLAUDE_PLUGIN_OPTION_HOME": "decks/a"}, ""),
        ({"AGENTDECK_HOME": "~other/x"}, ""),
    ],
)
def test_the_deck_home_the_launchers_take(given: dict[str, str], home: str) -> None:
    assert _home({"PATH": os.environ["PATH"], "HOME": "/u", **given}) == home


def test_without_agentdeck_on_path_the_hook_says_nothing(tmp_path: Path) -> None:
    """Claude Code's own rules decide, as without the plugin."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = launch("agentdeck-hook", env, '{"hook_event_name": "SessionStart"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_hook_runs_agentdecks_client_found_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = claude_env(tmp_path, CLAUDE_PLUGIN_DATA=str(data), AGENTDECK_HOME=str(tmp_path / "h"))
    done = launch("agentdeck-hook", env, "not a hook payload")
    # the client's own answer to a broken stdin: it ran, and let the call pass
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("agentdeck hook: "), done.stderr
    exe, py, client = (data / "hook-client").read_text().splitlines()
    assert Path(exe) == Path(env["PATH"].split(os.pathsep)[0]) / "agentdeck"
    assert Path(client) == client_path() and os.access(py, os.X_OK)

    # a stale entry (agentdeck moved) is found afresh
    (data / "hook-client").write_text(f"{exe}\n/nonexistent/python\n{client}\n")
    again = launch("agentdeck-hook", env, "not a hook payload")
    assert again.stderr.startswith("agentdeck hook: "), again.stderr
    assert (data / "hook-client").read_text().splitlines() == [exe, py, client]


@pytest.mark.parametrize("where", ["claude/settings.json", "project/.claude/settings.local.json"])
def test_the_hook_steps_aside_for_hooks_install(tmp_path: Path, where: str) -> None:
    """Both would hand every event to the deck twice (seen: each tool call recorded
    twice); the settings file's hooks, which someone installed there, stay."""
    assert f"marker='{MARKER}'" in (SCRIPTS / "agentdeck-hook").read_text()
    settings = tmp_path / where
    settings.parent.mkdir(parents=True)
    command = f"/usr/bin/python3 -S /x/client.py /h {MARKER}"
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}}))
    env = claude_env(
        tmp_path,
        CLAUDE_PLUGIN_DATA=str(tmp_path / "data"),
        CLAUDE_PROJECT_DIR=str(tmp_path / "project"),
    )
    done = launch("agentdeck-hook", env, "not a hook payload")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # the client never ran
    assert not (tmp_path / "data").exists()

    settings.write_text(json.dumps({"hooks": {}}))  # after `hooks uninstall`
    assert launch("agentdeck-hook", env, "x").stderr.startswith("agentdeck hook: ")


def test_the_mcp_server_needs_agentdeck_and_says_so(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = launch("agentdeck-mcp", env)
    assert done.returncode == 1 and "agentdeck is not on PATH" in done.stderr
