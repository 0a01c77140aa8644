"""``agentdeck policy replay``, run as a user would: a real agent on the scripted
model records its calls, then a stricter profile file is replayed over them,
without a daemon and through one (the same bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli

STRICTER = "name: stricter\ndefault: ask\nallow: [Read, 'Bash(ls:*)']\ndeny: ['Bash(echo:*)']\n"


def recorded(tmp_path: Path, env: dict[str, str]) -> None:
    turns = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]}
        for c in ("echo hi", "ls")
    ]
    script = tmp_path / "calls.yaml"
    script.write_text(
        yaml.safe_dump({"name": "calls", "turns": [*turns, {"reply": [{"text": "ok"}]}]})
    )
    ran = deck(env, "run", "--scenario", str(script), "--profile", "permissive", "go")
    assert ran.code == 0, ran


def test_a_profile_file_replayed_over_a_real_run(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    recorded(tmp_path, env)
    profile = tmp_path / "stricter.yaml"
    profile.write_text(STRICTER)

    text = deck(env, "policy", "replay", "--profile", str(profile), "--since", "1h")
    assert text.code == 0, text
    lines = text.out.splitlines()
    assert lines[0].startswith("profile stricter (") and ", the calls since " in lines[0]
    assert lines[1] == "2 tool calls: 1 would change, 1 unchanged, 0 not re-decided"
    assert "allow→deny  1  rule `Bash(echo:*)`" in text.out
    assert '{"command": "echo hi"}' in text.out and "(ran under permissive)" in text.out

    as_json = deck(env, "policy", "replay", "--profile", str(profile), "--json").json()
    assert (as_json["calls"], as_json["changed"], as_json["profile"]) == (2, 1, "stricter")
    (group,) = as_json["groups"]
    assert (group["change"], group["rule"], group["count"]) == ("allow→deny", "Bash(echo:*)", 1)

    (agent,) = deck(env, "ls", "--json").json()
    mine = deck(env, "policy", "replay", "--profile", "strict", "--agent", agent["id"], "--json")
    assert mine.json()["agent_id"] == agent["id"] and mine.json()["calls"] == 2
    elsewhere = deck(
        env, "policy", "replay", "--profile", "strict", "--project", str(tmp_path / "x")
    )
    assert elsewhere.code == 0 and elsewhere.out.splitlines()[1].startswith("0 tool calls")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--profile", "no-such-profile"), "no such profile"),
        (("--profile", "/no/such/file.yaml"), "cannot read the profile"),
        (("--profile", "strict", "--since", "7x"), "cannot read the period '7x'"),
        (("--profile", "strict", "--agent", "a", "--project", "/p"), "not both"),
        (("--profile", "strict", "--agent", "nobody"), "nobody"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = deck(deck_env(tmp_path), "policy", "replay", *args)
    assert done.code in (1, 2) and message in done.err, done
    assert "Traceback" not in done.err


@pytest.mark.anyio
async def test_through_a_daemon_the_same_bytes(tmp_path: Path, daemons: list[Daemon]) -> None:
    env = deck_env(tmp_path)
    recorded(tmp_path, env)
    profile = tmp_path / "stricter.yaml"
    profile.write_text(STRICTER)
    args = ("policy", "replay", "--profile", str(profile))
    alone = deck(env, *args)
    daemons.append(await Daemon(env).start())
    served = deck(env, *args)
    assert served.code == alone.code == 0
    assert served.out == alone.out


def test_an_agent_s_own_allow_is_not_said_to_be_the_profile_s(tmp_path: Path) -> None:
    """A run with `--allow 'Bash(python3:*)'` under a profile that denied python3,
    replayed under strict: the call now allowed is allowed by the agent's own rule,
    which the report says (never "profile:strict": strict allows no python3)."""
    env = deck_env(tmp_path)
    turns = [{"reply": [{"tool_use": {"name": "Bash", "input": {"command": "python3 -V"}}}]}]
    script = tmp_path / "calls.yaml"
    script.write_text(yaml.safe_dump({"name": "c", "turns": [*turns, {"reply": [{"text": "ok"}]}]}))
    then = tmp_path / "then.yaml"
    then.write_text("name: then\ndefault: deny\ndeny: ['Bash(python3 -V)']\n")
    ran = deck(env, "run", "--scenario", str(script), "--profile", str(then),
               "--allow", "Bash(python3:*)", "go")  # fmt: skip
    assert ran.code == 0, ran

    text = deck(env, "policy", "replay", "--profile", "strict")
    assert text.code == 0, text
    assert "deny→allow  1  rule `Bash(python3:*)`  [agent:(own rules)]" in text.out, text.out
    assert "profile:strict" not in text.out and "'s own allow rules" in text.out
    (group,) = deck(env, "policy", "replay", "--profile", "strict", "--json").json()["groups"]
    assert (group["rule"], group["source"]) == ("Bash(python3:*)", "agent:(own rules)")
