"""``config_dir: isolated`` on the real Claude Code CLI with the scripted model:
each agent runs with its own Claude config directory under the home, seeded with
copies of the user's settings, never their credentials (the scripted model needs
no login); nothing is written into another agent's directory nor the user's; a
resume finds the agent's transcript in its own directory, a fork a copy of it in its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.agent_file import AgentFile
from agentdeck.errors import PolicyError, UsageError
from agentdeck.runner.config_dirs import config_dir_of, isolate, isolated_dir
from agentdeck.runner.runner import Runner
from agentdeck.sandbox.plan import project_slug
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio]
ISOLATED = AgentFile(config_dir="isolated")


def _user_config(settings: Settings) -> Path:
    user = settings.claude_config_dir
    assert user is not None
    (user / "skills" / "greet").mkdir(parents=True)
    (user / "skills" / "greet" / "SKILL.md").write_text("---\nname: greet\n---\nhi\n")
    (user / "settings.json").write_text('{"env": {"USER_SETTING": "1"}}')
    (user / "CLAUDE.md").write_text("USER-MEMORY\n")
    (user / ".credentials.json").write_text('{"claudeAiOauth": {}}')
    return user


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file and directory under ``root`` (a file's bytes)."""
    found: dict[str, bytes | None] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(Path(folder, name), root)] = None
        for name in files:
            path = Path(folder, name)
            found[os.path.relpath(path, root)] = path.read_bytes()
    return found


def _transcripts(config: Path) -> list[str]:
    return sorted(p.name for p in config.glob("projects/*/*.jsonl"))


@pytest.mark.cli
@pytest.mark.parametrize(
    ("sandbox", "source"), [("process", "template"), ("off", "template"), ("process", "profile")]
)
async def test_isolated_agents_write_only_into_their_own_config_dir_and_resume(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path, sandbox: str, source: str
) -> None:
    """With the process sandbox (its view laid over the agent's own directory) and
    without; isolated by its template's key or by its profile's."""
    store, runner = deck
    user = _user_config(settings)
    before = _tree(user)
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "profile.yaml"
    rules = {"name": "isolated", "default": "deny", "sandbox": {"mode": sandbox}}
    if source == "profile":
        rules["config_dir"] = "isolated"
    profile.write_text(yaml.safe_dump(rules))
    claude = ISOLATED if source == "template" else AgentFile()
    spec = AgentSpec(
        prompt="hello", scenario="chat", cwd=str(work), claude=claude, profile=str(profile)
    )
    first = await runner.start(spec)
    second = await runner.start(spec)
    await first.wait_finished(timeout=120)
    await second.wait_finished(timeout=120)
    agents = [await store.get_agent(s.agent.id) for s in (first, second)]
    assert [a.state for a in agents] == [AgentState.DONE, AgentState.DONE], agents
    if source == "template":
        assert agents[0].spec.claude.config_dir == "isolated"  # kept with the agent
    assert [a.extra["sandbox"] for a in agents] == [sandbox, sandbox]

    # The user's directory is as it was: not one file more, none changed.
    assert _tree(user) == before
    dirs = [config_dir_of(settings, a) for a in agents]
    assert dirs == [settings.home_dir / "claude-config" / a.id for a in agents]
    for agent, own, other in ((agents[0], dirs[0], dirs[1]), (agents[1], dirs[1], dirs[0])):
        # Its transcript is in its own directory, and only there.
        assert _transcripts(own) == [f"{agent.session_id}.jsonl"]
        assert f"{agent.session_id}.jsonl" not in _transcripts(other)
        # Seeded with copies of the user's settings; never the credentials.
        assert (own / "CLAUDE.md").read_text() == "USER-MEMORY\n"
        assert not (own / "CLAUDE.md").is_symlink()
        assert (own / "skills" / "greet" / "SKILL.md").is_file()
        assert not (own / ".credentials.json").exists()
        assert not (own / ".credentials.json").is_symlink()
        assert (own.stat().st_mode & 0o777) == 0o700
    slug = project_slug(str(work.resolve())) or ""
    assert not (user / "projects" / slug).exists()

    # A resume (a new process) finds its transcript: the model sees the history.
    agent = agents[0]
    seen = _tree(dirs[1])
    resumed = await runner.resume(agent.id, "say it again")
    await resumed.wait_finished(timeout=120)
    assert resumed.agent.state is AgentState.DONE, resumed.agent
    assert resumed.agent.session_id == agent.session_id
    requests = [r for m in runner.scripted_models().values() for r in m.requests if r.turn]
    assert "hello" in str(requests[-1].body["messages"])
    assert _tree(dirs[1]) == seen  # the other agent's directory untouched
    assert _tree(user) == before

    # A fork goes on from a copy of its parent's transcript, in a directory of its own.
    fork = await runner.resume(agent.id, "again please", fork=True)
    await fork.wait_finished(timeout=120)
    assert fork.agent.state is AgentState.DONE, fork.agent
    own = config_dir_of(settings, fork.agent)
    assert own == settings.home_dir / "claude-config" / fork.agent.id
    assert _transcripts(own) == sorted(
        [f"{agent.session_id}.jsonl", f"{fork.agent.session_id}.jsonl"]
    )
    assert f"{fork.agent.session_id}.jsonl" not in _transcripts(dirs[0])
    requests = [r for m in runner.scripted_models().values() for r in m.requests if r.turn]
    assert "say it again" in str(requests[-1].body["messages"])
    assert _tree(dirs[1]) == seen and _tree(user) == before


def test_the_users_login_is_linked_only_when_the_deck_logs_in_with_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The subscription login (no key, no token, no scripted model) is the user's
    credentials file, linked (a copy's rotated refresh token would log the user out);
    with a key it is never there, and a link made before goes."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CLAUDE_CODE_USE_BEDROCK", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_USE_VERTEX", raising=False)
    user = _user_config(settings)
    own = isolate(settings, "a0000000000abcdef", {})
    link = own / ".credentials.json"
    assert link.is_symlink() and link.resolve() == (user / ".credentials.json").resolve()
    assert isolate(settings, "a0000000000abcdef", {"ANTHROPIC_API_KEY": "k"}) == own
    assert not link.exists() and not link.is_symlink()
    scripted = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    assert not (isolate(settings, "a0000000000abcdeg", scripted) / ".credentials.json").exists()


def test_an_agent_id_is_never_a_path(settings: Settings) -> None:
    for bad in ("../x", "a/b", "", ".hidden", "a" * 65):
        with pytest.raises(UsageError):
            isolated_dir(settings, bad)


def test_a_profile_says_shared_or_isolated_and_a_child_stays_isolated() -> None:
    from agentdeck.core.policy_inherit import meet
    from agentdeck.core.policy_profile import profile_from_dict

    shared = profile_from_dict({"name": "a"}, "a.yaml")
    isolated = profile_from_dict({"name": "b", "config_dir": "isolated"}, "b.yaml")
    assert (shared.config_dir, isolated.config_dir) == ("shared", "isolated")
    with pytest.raises(PolicyError, match="`config_dir` must be shared or isolated"):
        profile_from_dict({"name": "c", "config_dir": "/tmp/x"}, "c.yaml")
    assert meet(isolated, shared).config_dir == "isolated"
    assert meet(shared, isolated).config_dir == "isolated"
    assert meet(shared, shared).config_dir == "shared"


def test_a_transcript_put_back_before_the_first_start_is_kept_and_the_dir_seeded(
    settings: Settings,
) -> None:
    """Another host resuming the agent puts its kept transcript back first
    (runner.transcripts): the directory is seeded around it, once."""
    _user_config(settings)
    own = isolated_dir(settings, "a0000000000abcdeh")
    kept = own / "projects" / "-w" / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text("TRANSCRIPT\n")
    assert isolate(settings, "a0000000000abcdeh", {"ANTHROPIC_API_KEY": "k"}) == own
    assert kept.read_text() == "TRANSCRIPT\n"
    assert (own / "CLAUDE.md").read_text() == "USER-MEMORY\n"
    (own / "CLAUDE.md").write_text("THE AGENT'S OWN\n")
    isolate(settings, "a0000000000abcdeh", {"ANTHROPIC_API_KEY": "k"})  # a resume: not again
    assert (own / "CLAUDE.md").read_text() == "THE AGENT'S OWN\n"
