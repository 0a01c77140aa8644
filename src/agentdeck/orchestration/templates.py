"""Agent templates from disk: the project's, the user's and the built-in catalog.

Where they come from, highest first: ``<project>/.claude/agents/*.md``, the user's
``~/.claude/agents/*.md`` (``$CLAUDE_CONFIG_DIR/agents`` when that is set) and the
catalog shipped in this package. A name found in a higher place overrides the
lower ones. Parsing and validation are ``core.templates``; this module reads
files and YAML. ``resolve`` also holds the template to the profile it runs under
(``core.templates_policy``): a key that would give more than the profile is its
error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from agentdeck.core.policy_profile import Profile
from agentdeck.core.profile_ref import project_file
from agentdeck.core.templates import (
    Problem,
    Template,
    TemplateError,
    parse_template,
    split_front_matter,
)
from agentdeck.errors import NotFound, PolicyError
from agentdeck.governance.profiles import in_project
from agentdeck.settings import Settings

CATALOG = Path(__file__).parent / "catalog"
MAX_FILE_BYTES = 256 * 1024
SCOPES = ("project", "user", "built-in")


def user_agents_dir(settings: Settings) -> Path:
    base = settings.claude_config_dir or Path("~/.claude")
    return base.expanduser() / "agents"


def project_agents_dir(project: str | Path) -> Path:
    return Path(project).expanduser() / ".claude" / "agents"


def load_template(path: Path, *, scope: str = "project") -> Template:
    """One file; ``TemplateError`` with every problem (a YAML error names its line)."""
    source = str(path) if scope != "built-in" else f"built-in:{path.stem}"
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        problem = f"cannot read it: {exc.strerror or exc}"
        raise TemplateError([Problem(source, None, problem)]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise TemplateError(
            [Problem(source, None, f"larger than {MAX_FILE_BYTES // 1024} KiB: not a template")]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateError([Problem(source, None, f"not UTF-8 text ({exc.reason})")]) from None
    parts = split_front_matter(text)
    if parts is None:
        raise TemplateError(
            [
                Problem(
                    source,
                    None,
                    "no front matter: start the file with a --- line, then "
                    "name and description, then --- and the prompt",
                )
            ]
        )
    front, body = parts
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""  # +1 for the --- line
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TemplateError([Problem(source, None, f"{where}YAML error: {what}")]) from None
    return parse_template(data, body, source, scope=scope, stem=path.stem)


@dataclass
class Catalog:
    """Every template visible from one project, after overrides."""

    templates: dict[str, Template] = field(default_factory=dict)
    shadowed: list[Template] = field(default_factory=list)  # overridden by a higher scope
    invalid: list[TemplateError] = field(default_factory=list)
    # (scope, file stem) of each invalid file, in the order of ``invalid``
    invalid_at: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str) -> Template:
        found = self.templates.get(name)
        if found is None:
            known = ", ".join(sorted(self.templates)) or "none"
            raise NotFound("agent template", name, hint=f"templates here: {known}")
        return found


def template_dirs(settings: Settings, project: str | Path | None) -> list[tuple[str, Path]]:
    dirs = [("built-in", CATALOG), ("user", user_agents_dir(settings))]
    if project:
        dirs.append(("project", project_agents_dir(project)))
    return dirs


def catalog(settings: Settings, project: str | Path | None = None) -> Catalog:
    """Built-in, then user, then project templates; a later one overrides by name.
    A file that does not validate, or asks for more than its profile gives, is
    listed in ``invalid`` and overrides nothing."""
    out = Catalog()
    profiles: dict[str, Profile | PolicyError] = {}
    for scope, directory in template_dirs(settings, project):
        try:
            files = sorted(p for p in directory.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            try:
                template = load_template(path, scope=scope)
                _held(template, settings, project, profiles)
            except TemplateError as exc:
                out.invalid.append(exc)
                out.invalid_at.append((scope, path.stem))
                continue
            earlier = out.templates.get(template.name)
            if earlier is not None:
                out.shadowed.append(earlier)
            out.templates[template.name] = template
    return out


def _held(
    template: Template,
    settings: Settings,
    project: str | Path | None,
    profiles: dict[str, Profile | PolicyError],
) -> None:
    """``TemplateError`` if ``template`` gives more than its profile (each
    profile read once per catalog)."""
    from agentdeck.core.templates_policy import govern

    ref = with_profile_path(template, project).profile or settings.profile
    if ref not in profiles:
        try:
            profiles[ref] = profile_for_templates(ref, settings)
        except PolicyError as exc:
            profiles[ref] = exc
    found = profiles[ref]
    if isinstance(found, PolicyError):
        raise TemplateError([Problem(template.source, "profile", found.message)])
    govern(template, found)


_SHIPPED: dict[str, Profile] = {}  # the package's own profiles never change: read once


def profile_for_templates(ref: str, settings: Settings) -> Profile:
    """The profile ``ref`` names, as an agent runs under it (the deck's secrets
    denied); a shipped one is read once per process, a file each time."""
    from agentdeck.governance.profiles import builtin_profile_names, guarded, load_profile

    if ref in builtin_profile_names():
        if ref not in _SHIPPED:
            _SHIPPED[ref] = load_profile(ref)
        return guarded(_SHIPPED[ref], settings)
    return guarded(load_profile(ref), settings)


def resolve(
    settings: Settings, name: str, project: str | Path | None = None, *, profile: str | None = None
) -> Template:
    """The template named ``name`` as seen from ``project``, held to ``profile``
    (else its own, else the settings'). An invalid file of that name where it
    would win (in the scope of the valid one, or a higher one) is its error —
    never a silent fall-back to a lower scope; one below the winner is out of
    sight."""
    found = catalog(settings, project)
    winner = found.templates.get(name)
    rank = {scope: i for i, scope in enumerate(SCOPES)}  # project first
    for error, (scope, stem) in zip(found.invalid, found.invalid_at, strict=True):
        if stem == name and (winner is None or rank[scope] <= rank[winner.scope]):
            raise error
    template = with_profile_path(found.get(name), project)
    return governed(template, settings, profile)


def governed(template: Template, settings: Settings, profile: str | None = None) -> Template:
    """``template`` if the profile it runs under gives every key of it, else
    ``TemplateError`` naming each key and the profile's rule."""
    from agentdeck.core.templates_policy import govern
    from agentdeck.runner.endpoints import refuse_endpoint

    ref = profile or template.profile or settings.profile
    held = profile_for_templates(ref, settings)
    template = govern(template, held)
    refuse_endpoint(template, held, settings)  # its model endpoint, as the profile says
    return template


def with_profile_path(template: Template, project: str | Path | None) -> Template:
    """The template with a ``.agentdeck/NAME`` profile as the file's path in
    ``project`` (a regular file, no link followed), as a spec carries it."""
    if template.profile is None or project_file(template.profile) is None:
        return template
    try:
        path = in_project(template.profile, project)
    except ValueError as exc:
        raise TemplateError([Problem(template.source, "profile", str(exc))]) from None
    return replace(template, profile=str(path))
