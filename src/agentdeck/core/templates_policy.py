"""A template under its policy profile: what a key could loosen, the profile decides. Pure.

agentdeck's policy sees every tool call first (a PreToolUse hook), so most keys
only narrow: ``disallowedTools``, ``permissionMode: plan``, a ``tools`` list the
governor intersects with the profile's. The keys that could reach past it are
checked here, against the profile the agent will run under, and refused with one
line naming the key and the profile's rule — never silently widened:

* ``permissionMode`` above what the profile allows: ``bypassPermissions`` and
  ``auto`` only under a profile whose own ``permission_mode`` is that loose;
  ``acceptEdits`` only where the profile lets an edit in the workspace through.
* ``tools`` naming a tool the profile does not enable, disables, or denies
  outright: the list would promise what the agent cannot have.
* ``mcpServers`` whose every tool the profile denies or does not enable; the
  others' tools are ``mcp__server__tool`` subjects of the policy, call by call.
* ``hooks``: Claude Code runs a hook's command itself, without asking anyone, so
  each command must be one the profile allows as a Bash command.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from agentdeck.core.agent_file import AgentFile
from agentdeck.core.policy import decide
from agentdeck.core.policy_profile import Decision, Profile
from agentdeck.core.templates import Problem, Template
from agentdeck.errors import TemplateError

__all__ = ["DEFAULT_MODE", "ceiling", "effective_mode", "govern", "loosening", "refuse_loosening"]

DEFAULT_MODE = "acceptEdits"  # agentdeck's own: the policy's hook sees every edit first
# How much each mode lets Claude Code approve on its own, least first.
_RANK = {"plan": 0, "dontAsk": 0, "default": 1, "acceptEdits": 2, "auto": 3, "bypassPermissions": 4}
_WORKSPACE, _HOME = "/workspace", "/home/agent"  # any pair: rules are relative to them


def effective_mode(template: Template) -> str:
    """The permission mode its Claude Code runs in."""
    return template.claude.permission_mode or DEFAULT_MODE


def govern(template: Template, profile: Profile) -> Template:
    """``template`` if no key of it gives more than ``profile``; else
    ``TemplateError`` with one line per key that would."""
    refuse_loosening(template.source, template.tools, template.claude, profile)
    return template


def refuse_loosening(
    source: str, tools: Sequence[str], claude: AgentFile, profile: Profile
) -> None:
    """``TemplateError`` (lines of ``source``) if ``tools`` or ``claude`` give more
    than ``profile``: what the runner checks again with the profile an agent
    really runs under (its caller's, its ancestors')."""
    problems = [Problem(source, key, why) for key, why in loosening(tools, claude, profile)]
    if problems:
        raise TemplateError(problems)


def loosening(
    tools: Sequence[str], claude: AgentFile, profile: Profile
) -> Iterator[tuple[str, str]]:
    """``(key, why)`` for each thing a template asks that ``profile`` does not give."""
    name = profile.name
    mode = claude.permission_mode
    if mode is not None and mode in _RANK:
        ceiling_mode, why = ceiling(profile)
        if _RANK[mode] > _RANK[ceiling_mode]:
            yield (
                "permissionMode",
                f"{mode} would let Claude Code approve calls that profile {name} decides "
                f"({why}); under it the loosest is {ceiling_mode}",
            )
    for tool in dict.fromkeys(t.split("(")[0] for t in tools):
        refused = _tool_refused(tool, profile)
        if refused:
            yield "tools", refused
    for server in claude.mcp_servers:
        refused = _server_refused(server.name, profile)
        if refused:
            yield "mcpServers", f"server `{server.name}`: {refused}"
    for hook in claude.hooks:
        verdict = decide(
            profile, "Bash", {"command": hook.command}, workspace=_WORKSPACE, home=_HOME
        )
        if verdict.decision is not Decision.ALLOW:
            by = f"rule `{verdict.rule}`" if verdict.rule else f"its default: {profile.default}"
            yield (
                "hooks",
                f"a {hook.event} hook's command is not one profile {name} allows as a Bash "
                f"command (it would {verdict.decision.value}: {by}); Claude Code runs hooks "
                "without asking, so only allowed commands may be hooks",
            )


def ceiling(profile: Profile) -> tuple[str, str]:
    """The loosest mode ``profile`` allows, and why."""
    own = profile.permission_mode
    if own in _RANK and _RANK[own] > _RANK[DEFAULT_MODE]:
        return own, f"its permission_mode is {own}"
    edit = decide(
        profile,
        "Edit",
        {"file_path": f"{_WORKSPACE}/file", "old_string": "a", "new_string": "b"},
        workspace=_WORKSPACE,
        home=_HOME,
    )
    if edit.decision is Decision.ALLOW:
        return DEFAULT_MODE, f"it sets no looser permission_mode than {DEFAULT_MODE}"
    by = f"rule `{edit.rule}`" if edit.rule else f"its default: {profile.default}"
    return "default", f"an edit in the workspace would {edit.decision.value}: {by}"


def _tool_refused(tool: str, profile: Profile) -> str | None:
    name = profile.name
    enabled = profile.enabled_tools
    if enabled is not None and not any(r.covers_tool(tool) for r in enabled):
        return f"`{tool}` is not one of the tools profile {name} enables"
    for rule in (*profile.disabled_tools, *profile.deny):
        if rule.is_bare and rule.covers_tool(tool):
            return f"`{tool}` is denied by profile {name} (rule `{rule.text}`)"
    return None


def _server_refused(server: str, profile: Profile) -> str | None:
    prefix, name = f"mcp__{server}", profile.name
    enabled = profile.enabled_tools
    if enabled is not None and not any(
        r.tool == prefix or r.tool.startswith(prefix + "__") or r.covers_tool(prefix + "__x")
        for r in enabled
    ):
        return f"profile {name} enables none of its tools (no `{prefix}` in enabled_tools)"
    for rule in (*profile.disabled_tools, *profile.deny):
        if rule.is_bare and rule.tool in (prefix, prefix + "__*"):
            return f"every tool of it is denied by profile {name} (rule `{rule.text}`)"
    return None
