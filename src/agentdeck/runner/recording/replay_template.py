"""``agentdeck replay ID --template T``: the recorded run replayed as template T's
agent would run it.

"As T" is what ``agentdeck run --template T PROMPT`` would start, its prompt the
recorded task (less the recorded template's ``initialPrompt``), in the restored
workspace: T's tools and disallowed tools, its body
as the appended system prompt, its Claude Code keys (permission mode, hooks, MCP
servers…), thinking, output schema, turn and budget caps, and its profile (an
explicit ``--profile`` wins over it; neither: the settings' default). The recorded
run's own settings (its tools, allow and deny, system prompt) are not carried.

What T cannot change is the model's side: the cassette answers. So T's ``model``
and ``model_endpoint`` do not reach a model (the endpoint is dropped: nothing of a
replay leaves the machine), its ``record`` key is irrelevant (a replay is never
recorded), and an orchestrator template gets no deck tools (the children it
would start are not in the cassette). Requests are compared on their tool calls:
a system prompt, a model or a first prompt that differs from the recorded one is
no divergence by itself (the answers were given to the recorded ones, which the
report says in a note), while a call T's tools or profile do not allow is.

The template is found as ``run`` finds it, by the caller (``cli.replay``, with
``orchestration.templates.resolve``: the recorded project's, the user's, the
built-in catalog), with the loader's rules for hostile files (size, UTF-8, front
matter, every key checked, held to the profile it runs under); a name that is no
template name is refused before any file is read (``checked_name``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agentdeck.core.agent import AgentSpec
from agentdeck.core.templates import NAME_MAX, NAME_PATTERN, Template, apply_template
from agentdeck.errors import UsageError

# The template as the caller resolved it, given the recorded project (the runner
# knows no orchestration: the CLI passes ``orchestration.templates.resolve``).
TemplateSource = Callable[[str | None], Template]


def checked_name(name: str) -> str:
    """``name`` if it may name a template; ``UsageError`` (exit 2) before any
    file is read when it is a path or anything else."""
    if len(name) > NAME_MAX or not NAME_PATTERN.fullmatch(name):
        raise UsageError(
            "--template takes a template's name (lowercase letters, digits and "
            f"hyphens, at most {NAME_MAX} characters), not a path",
            hint="see agentdeck agents ls",
        )
    return name


def spec_as_template(
    template: Template, recorded: AgentSpec, *, profile: str | None, recorded_model: str | None
) -> tuple[AgentSpec, list[str]]:
    """The spec of the replay as ``template`` runs it (see the module; the replay
    sets its workspace, name and the rest), and notes of what differs from the
    recorded run that the comparison does not see."""
    base = AgentSpec(
        prompt=task_of(recorded), cwd=recorded.cwd, project=recorded.project, owner=recorded.owner
    )
    spec = apply_template(template, base)
    spec = replace(
        spec,
        profile=profile or spec.profile,
        model_endpoint=None,
        orchestrator=False,
        record=False,
    )
    notes = [f"replayed as template {template.name} ({template.source})"]
    if (spec.append_system_prompt or "") != (recorded.append_system_prompt or ""):
        notes.append(
            "the system prompt differs from the recorded run's: the recorded answers were "
            "given to the recorded one (requests are compared on their tool calls only)"
        )
    if spec.prompt != recorded.prompt:
        notes.append(
            "the first prompt differs from the recorded one (the template's initialPrompt)"
        )
    if template.model and template.model != recorded_model:
        notes.append(
            f"the template names model {template.model}: the answers are the recorded "
            f"model's ({recorded_model or 'unknown'})"
        )
    if template.model_endpoint is not None:
        notes.append("the template's model endpoint is not used: the cassette answers")
    if template.orchestrator:
        notes.append(
            "the template is an orchestrator: its deck tools are not given in a replay "
            "(the children it would start are not in the cassette)"
        )
    if tuple(spec.tools) != tuple(recorded.tools):
        offered = ", ".join(spec.tools) or "every tool"
        notes.append(f"tools: {offered} (recorded: {', '.join(recorded.tools) or 'every tool'})")
    if (spec.profile or None) != (recorded.profile or None):
        shown = spec.profile or "the settings' default"
        notes.append(f"profile: {shown} (recorded: {recorded.profile or 'the default'})")
    return spec, notes


def task_of(recorded: AgentSpec) -> str:
    """The recorded prompt without what the recorded run's template put before it
    (its ``initialPrompt``, which T's replaces)."""
    first = recorded.claude.initial_prompt if recorded.claude else None
    if not first:
        return recorded.prompt
    if recorded.prompt == first:
        return ""
    return recorded.prompt.removeprefix(f"{first}\n\n")


def recorded_model(bodies: list[Any]) -> str | None:
    """The model the recorded agent's first request named."""
    for body in bodies:
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return str(body["model"])
    return None
