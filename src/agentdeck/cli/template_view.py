"""``agentdeck agents show``'s rows: a resolved template, each part with where it
comes from (the template's file, the profile, the settings, agentdeck's default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentdeck.errors import PolicyError

if TYPE_CHECKING:
    from agentdeck.core.policy_profile import Profile
    from agentdeck.core.templates import Template
    from agentdeck.settings import Settings

Row = tuple[str, Any, str]  # key, value, where it comes from
_PRECEDENCE = "the first of the project's, the user's, the built-in"


def resolved(template: Template, settings: Settings, project: str | None = None) -> list[Row]:
    """Every key of ``template`` as an agent gets it (in ``project``), in Claude
    Code's order."""
    from agentdeck.core.templates_policy import DEFAULT_MODE, ceiling
    from agentdeck.governance.profiles import load_guarded
    from agentdeck.runner.endpoints import shown as endpoint_shown

    own = "template"
    profile_ref = template.profile or settings.profile
    profile: Profile | None
    try:
        profile = load_guarded(profile_ref, settings)
        profile_from = own if template.profile else "settings (AGENTDECK_PROFILE)"
    except PolicyError as exc:
        profile, profile_from = None, f"cannot be read: {exc.message}"
    by = f"profile {profile.name}" if profile else "the profile"
    claude = template.claude

    def mine(key: str, value: Any, otherwise: Any, why: str) -> Row:
        given = value not in (None, (), [], False)
        shown = (list(value) if isinstance(value, tuple) else value) if given else otherwise
        return (key, shown, own if given else why)

    mode = claude.permission_mode or DEFAULT_MODE
    mode_from = own if claude.permission_mode else "agentdeck's default"
    if profile is not None:
        loosest, why = ceiling(profile)
        mode_from += f"; {by} allows at most {loosest} ({why})"
    return [
        ("from", f"{template.scope}: {template.source}", _PRECEDENCE),
        ("name", template.name, own),
        ("description", template.description, own),
        mine("tools", template.tools, "all", f"every tool; {by} decides each call"),
        mine("disallowedTools", template.disallowed_tools, [], "none"),
        mine("model", template.model, settings.model or "Claude Code's default", "settings"),
        ("model_endpoint", *endpoint_shown(template.model_endpoint, profile, settings)),
        ("permissionMode", mode, mode_from),
        mine("maxTurns", template.max_turns, None, "no limit of its own"),
        _auto_compact(template.auto_compact_at),
        ("skills", list(claude.skills), _skills_from(template, settings, project)),
        mine(
            "mcpServers",
            [s.to_dict() for s in claude.mcp_servers],
            [],
            f"agentdeck's deck server only; every mcp__ call is decided by {by}",
        ),
        mine("hooks", [h.to_dict() for h in claude.hooks], [], "none of its own"),
        mine("memory", claude.memory, None, "the project's memory (agentdeck)"),
        mine("background", claude.background, False, "agentdeck's default"),
        mine("effort", claude.effort, None, "the model's default"),
        mine("thinking", template.thinking, None, "Claude Code's default"),
        mine("initialPrompt", claude.initial_prompt, None, "none"),
        mine("color", template.color, None, "none"),
        ("profile", profile.name if profile else profile_ref, profile_from),
        mine("budget_usd", template.budget_usd, None, f"{by}'s budgets"),
        mine("workspace", template.workspace, "new", "agentdeck's default"),
        mine("orchestrator", template.orchestrator, False, "agentdeck's default"),
        mine("subagents", [a.name for a in claude.subagents], [], "none of its own"),
        _memory_review(template),
    ]


def _auto_compact(at: float | None) -> Row:
    """The value as written; where it comes from says what it means (0.8 is a share)."""
    from agentdeck.core.compaction import AUTO_COMPACT_KEY, is_share, share_text

    if at is None:
        return (AUTO_COMPACT_KEY, None, "never (Claude Code's own only)")
    if is_share(at):
        return (AUTO_COMPACT_KEY, at, f"template: {share_text(at)} of the model's context window")
    return (AUTO_COMPACT_KEY, at, f"template: {int(at):,} tokens of context")


def _memory_review(template: Template) -> Row:
    """Whether what its agents remember waits for a person (``core.memory_proposals``)."""
    from agentdeck.core.memory_proposals import skips_review

    if template.memory_review is None:
        return ("memory_review", "inbox", "agentdeck's default: a person reviews each")
    if template.memory_review == "auto" and not skips_review("auto", template.scope):
        return ("memory_review", "inbox", "template says auto; a project's template may not")
    return ("memory_review", template.memory_review, "template")


def _skills_from(template: Template, settings: Settings, project: str | None) -> str:
    """Where each of its skills is found here (``runner.skills``), or that one is not."""
    from agentdeck.core.skills import resolve_names
    from agentdeck.runner.skills import found

    names = template.claude.skills
    if not names:
        return "none"
    _, skills, problems = resolve_names(names, found(settings, project))
    where = [f"{s.qualified}: {s.source}" for s in skills]
    return "; ".join(["template", *where, *(f"{p}: it would not start" for p in problems)])
