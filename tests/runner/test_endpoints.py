"""Model endpoints on the real Claude Code CLI: two scripted models, one per endpoint.

* two agents run at once, one on the endpoint its template names and one on the
  endpoint its profile names: each model sees only its own agent's requests, with
  the key its endpoint names (the model records which key came as a digest);
* the keys are in no table, no byte of the database, no file of the home;
* an endpoint whose key's variable is set nowhere refuses the agent, naming the
  variable; nothing reaches the model;
* a template's thinking reaches Claude Code's command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.endpoints import Endpoint, ModelEndpoint
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import AgentProcessError, ConfigError
from agentdeck.mockmodel import MockModel, load_scenario
from agentdeck.runner.endpoints import NO_KEY, endpoint_env
from agentdeck.runner.options import build_options
from agentdeck.runner.runner import Runner
from agentdeck.runner.sdk_private import spawn_command
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.sandbox.conftest import needs_bwrap
from tests.support import deckcli
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio]


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _model(tmp_path: Path, name: str) -> MockModel:
    path = tmp_path / f"{name}.yaml"
    turns = [{"reply": [{"text": f"answer from {name}"}]}]
    path.write_text(yaml.safe_dump({"name": name, "turns": turns}))
    return MockModel([load_scenario(path)])


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _tables(db: Path) -> str:
    texts: list[str] = []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in names:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                texts.extend(str(v) for v in row if v is not None)
    return "\n".join(texts)


def _home_files_with(home: Path, secret: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def _texts(model: MockModel) -> list[str]:
    return [str(r.body) for r in model.requests if r.path.endswith("/v1/messages")]


@pytest.mark.cli
async def test_two_agents_on_two_endpoints_at_once(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    alpha_key, beta_key = (f"sk-{n}-{uuid.uuid4().hex}" for n in ("alpha", "beta"))
    async with _model(tmp_path, "alpha") as alpha, _model(tmp_path, "beta") as beta:
        (settings.home / "endpoints.yaml").write_text(
            yaml.safe_dump(
                {
                    "alpha": {"base_url": alpha.url_for("alpha"), "api_key_env": "K1_ALPHA_KEY"},
                    "beta": {"base_url": beta.url_for("beta"), "api_key_env": "K1_BETA_KEY"},
                }
            )
        )
        # One names its endpoint (as its template would); the other gets its
        # profile's, having none of its own.
        profile = tmp_path / "on-beta.yaml"
        profile.write_text(yaml.safe_dump({"name": "on-beta", "model_endpoint": "beta"}))
        by_template = AgentSpec(
            prompt="task-for-alpha", template="t", model_endpoint=ModelEndpoint("alpha")
        )
        by_profile = AgentSpec(prompt="task-for-beta", profile=str(profile))
        with _env(K1_ALPHA_KEY=alpha_key, K1_BETA_KEY=beta_key):
            sessions = await asyncio.gather(runner.start(by_template), runner.start(by_profile))
            await asyncio.gather(*(s.wait_finished(timeout=120) for s in sessions))
        a_texts, b_texts = _texts(alpha), _texts(beta)
        assert a_texts and b_texts
        assert all("task-for-alpha" in t and "task-for-beta" not in t for t in a_texts)
        assert all("task-for-beta" in t and "task-for-alpha" not in t for t in b_texts)
        # Every key that came is its endpoint's (Claude Code's HEAD /api/hello
        # carries none); every request for the model carries it.
        for model, key in ((alpha, alpha_key), (beta, beta_key)):
            assert {r.credential for r in model.requests if r.credential} == {_digest(key)}
            assert all(r.credential for r in model.requests if r.path.endswith("/v1/messages"))

    for session, said in zip(sessions, ("answer from alpha", "answer from beta"), strict=True):
        agent = await store.get_agent(session.agent.id)
        assert agent.last_error is None, agent.last_error
        events = await store.read(agent_id=agent.id, limit=10_000)
        texts = [str(e.data) for e in events if e.type == EventType.ASSISTANT_TEXT]
        assert any(said in t for t in texts), texts
    # The spec keeps the endpoint's name, never its key.
    stored = await store.get_agent(sessions[0].agent.id)
    assert stored.spec.model_endpoint == ModelEndpoint("alpha")
    for key in (alpha_key, beta_key):
        assert key not in _tables(settings.db_path)
        for suffix in ("", "-wal", "-shm"):
            path = settings.db_path.with_name(settings.db_path.name + suffix)
            assert not path.exists() or key.encode() not in path.read_bytes()
        assert _home_files_with(settings.home, key) == []


@pytest.mark.cli
async def test_a_key_set_nowhere_refuses_the_agent_naming_the_variable(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    async with _model(tmp_path, "alpha") as alpha:
        (settings.home / "endpoints.yaml").write_text(
            yaml.safe_dump(
                {"alpha": {"base_url": alpha.url_for("alpha"), "api_key_env": "K1_UNSET_KEY"}}
            )
        )
        os.environ.pop("K1_UNSET_KEY", None)
        spec = AgentSpec(prompt="go", template="t", model_endpoint=ModelEndpoint("alpha"))
        said = "model endpoint alpha .* needs its key in K1_UNSET_KEY, which is set nowhere"
        with pytest.raises(AgentProcessError, match=said):
            await runner.start(spec)
        assert alpha.requests == []
    (agent,) = await store.list_agents()
    assert agent.last_error is not None and "K1_UNSET_KEY" in agent.last_error


async def test_a_name_endpoints_yaml_lacks_refuses_the_agent(
    deck: tuple[Store, Runner], settings: Settings
) -> None:
    store, runner = deck
    spec = AgentSpec(prompt="go", template="t", model_endpoint=ModelEndpoint("nowhere"))
    with pytest.raises(AgentProcessError, match="template t: no model endpoint named nowhere"):
        await runner.start(spec)
    (agent,) = await store.list_agents()
    assert agent.last_error is not None and "nowhere" in agent.last_error


def test_a_templates_thinking_reaches_claude_code(settings: Settings, tmp_path: Path) -> None:
    for thinking, args in (
        ({"type": "adaptive"}, ["--thinking", "adaptive"]),
        ({"type": "enabled", "budget_tokens": 4096}, ["--max-thinking-tokens", "4096"]),
    ):
        spec = AgentSpec(prompt="go", thinking=thinking)
        options = build_options(
            spec, settings=settings, cwd=tmp_path, can_use_tool=None, stderr=None
        )
        command = spawn_command(options)
        at = command.index(args[0])
        assert command[at : at + 2] == args


@pytest.mark.cli
async def test_doctor_checks_every_named_endpoint_and_agents_show_resolves_one(
    tmp_path: Path,
) -> None:
    key = f"sk-up-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    home.mkdir()
    closed = socket.socket()  # bound, never listening: nothing answers there
    closed.bind(("127.0.0.1", 0))
    try:
        async with _model(tmp_path, "up") as up:
            up_url = up.url_for("up")
            (home / "endpoints.yaml").write_text(
                yaml.safe_dump(
                    {
                        "up": {"base_url": up_url, "api_key_env": "K1_UP_KEY"},
                        "keyless": {"base_url": up.url},
                        "down": {
                            "base_url": f"http://127.0.0.1:{closed.getsockname()[1]}",
                            "api_key_env": "K1_DOWN_KEY",
                        },
                    }
                )
            )
            env = deckcli.deck_env(tmp_path, K1_UP_KEY=key)
            env.pop("K1_DOWN_KEY", None)
            done = await asyncio.to_thread(deckcli.deck, env, "doctor", "--json")
            found = {c["name"]: c for c in json.loads(done.out)["checks"]}
            project = tmp_path / "project"
            agents = project / ".claude" / "agents"
            agents.mkdir(parents=True)
            (agents / "gw.md").write_text(
                "---\nname: gw\ndescription: On the up endpoint.\nmodel_endpoint: up\n"
                "thinking: adaptive\n---\nWork.\n"
            )
            shown = await asyncio.to_thread(
                deckcli.deck, env, "agents", "show", "gw", "--project", str(project), "--json"
            )
    finally:
        closed.close()
    assert found["endpoint up"]["status"] == "ok", found
    assert "K1_UP_KEY" in found["endpoint up"]["detail"]
    assert found["endpoint keyless"]["status"] == "ok"
    down = found["endpoint down"]
    assert down["status"] == "warn" and "K1_DOWN_KEY is set nowhere" in down["detail"], down
    assert key not in done.out and key not in done.err
    rows = shown.json()["resolved"]
    assert rows["model_endpoint"] == {
        "value": f"up ({up_url})",
        "from": "template; key in K1_UP_KEY",
    }
    assert rows["thinking"]["value"] == {"type": "adaptive"}
    assert key not in shown.out


@needs_bwrap
@pytest.mark.cli
async def test_a_confined_agent_reaches_its_endpoint_cold_and_warm(tmp_path: Path) -> None:
    """A process sandbox with no network lets the agent's own endpoint through,
    whether its Claude Code starts with it or was started ahead (the warm pool)."""
    settings = make_settings(tmp_path, warm_pool=1)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings, warm_pool=settings.warm_pool)
    key = f"sk-boxed-{uuid.uuid4().hex}"
    profile = tmp_path / "boxed.yaml"
    sandbox = {"mode": "process", "required": True, "network": {"mode": "off"}}
    profile.write_text(yaml.safe_dump({"name": "boxed", "sandbox": sandbox}))
    try:
        async with _model(tmp_path, "alpha") as alpha:
            (settings.home / "endpoints.yaml").write_text(
                yaml.safe_dump(
                    {"alpha": {"base_url": alpha.url_for("alpha"), "api_key_env": "K1_BOX_KEY"}}
                )
            )
            spec = AgentSpec(
                prompt="boxed-task",
                template="t",
                profile=str(profile),
                model_endpoint=ModelEndpoint("alpha"),
            )
            with _env(K1_BOX_KEY=key):
                cold = await runner.start(spec)
                await cold.wait_finished(timeout=120)

                async def ready() -> bool | None:
                    return True if len(runner.warm) else None

                await eventually(ready, timeout=60, what="a warm Claude Code")
                warm = await runner.start(spec)
                await warm.wait_finished(timeout=120)
            assert warm.warm_start
            for session in (cold, warm):
                agent = await store.get_agent(session.agent.id)
                assert agent.state == AgentState.DONE, agent.last_error
                events = await store.read(agent_id=agent.id, limit=10_000)
                texts = [str(e.data) for e in events if e.type == EventType.ASSISTANT_TEXT]
                assert any("answer from alpha" in t for t in texts), (agent.extra, texts)
            assert {r.credential for r in alpha.requests if r.credential} == {_digest(key)}
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


@needs_bwrap
@pytest.mark.cli
async def test_agentdeck_run_of_a_confined_template_on_an_endpoint(tmp_path: Path) -> None:
    """`agentdeck run --agent` with no daemon: its Claude Code is spawned early,
    confined, and still reaches the endpoint its template names."""
    key = f"sk-run-{uuid.uuid4().hex}"
    agents = tmp_path / "claude-config" / "agents"  # the user's templates (deck_env's)
    agents.mkdir(parents=True)
    (agents / "boxed.md").write_text(
        "---\nname: boxed\ndescription: Confined, on alpha.\nmodel_endpoint: alpha\n---\nWork.\n"
    )
    profile = tmp_path / "boxed.yaml"
    sandbox = {"mode": "process", "required": True, "network": {"mode": "off"}}
    profile.write_text(yaml.safe_dump({"name": "boxed", "sandbox": sandbox}))
    async with _model(tmp_path, "alpha") as alpha:
        home = tmp_path / "home"
        home.mkdir()
        (home / "endpoints.yaml").write_text(
            yaml.safe_dump(
                {"alpha": {"base_url": alpha.url_for("alpha"), "api_key_env": "K1_RUN_KEY"}}
            )
        )
        env = deckcli.deck_env(tmp_path, K1_RUN_KEY=key)
        args = ("run", "--agent", "boxed", "--profile", str(profile), "--json", "boxed-task")
        done = await asyncio.to_thread(deckcli.deck, env, *args)
        assert done.code == 0, done.out + done.err
        assert "answer from alpha" in done.out, done.out
        assert {r.credential for r in alpha.requests if r.credential} == {_digest(key)}
    assert key not in done.out + done.err


def test_the_key_comes_from_the_secrets_file_first_and_withholds_the_rest(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets.env"
    secrets.write_text("K1_FILE_KEY=from-file\n")
    secrets.chmod(0o600)
    settings = make_settings(tmp_path, mcp_secrets_file=secrets)
    endpoint = Endpoint("gw", "https://gw.test/v1", "K1_FILE_KEY")
    assert endpoint_env(endpoint, settings, {"K1_FILE_KEY": "from-env"}) == {
        "ANTHROPIC_BASE_URL": "https://gw.test/v1",
        "ANTHROPIC_API_KEY": "from-file",
        "ANTHROPIC_AUTH_TOKEN": "",
        "CLAUDE_CODE_OAUTH_TOKEN": "",
    }
    keyless = endpoint_env(Endpoint(None, "http://127.0.0.1:9", None), settings, {})
    assert keyless["ANTHROPIC_API_KEY"] == NO_KEY  # never the user's own login
    secrets.chmod(0o644)
    with pytest.raises(ConfigError, match="may be read by others") as refused:
        endpoint_env(endpoint, settings, {})
    assert "from-file" not in str(refused.value)
