"""How a profile (or a scenario) is named: a built-in's name, a project's file, or
a path.

Its own module so that the CLI's quick path can tell them apart without loading the
policy engine or YAML.

A path is the CLI user's own choice (``agentdeck run --profile ./mine.yaml``).
Where someone else chooses — a template an agent may have written, a request to
the API from anyone but the deck's owner — only a built-in's name or a file in
the project's ``.agentdeck/`` is accepted (``.agentdeck/NAME.yaml``): a path would
have the deck read any file its user can, and say what it found.
"""

from __future__ import annotations

_FILE_MARKERS = ("/", "\\", ".yaml", ".yml", ".json")
PROJECT_DIR = ".agentdeck"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
ACCEPTED = (
    "a built-in's name, or a file in the project's .agentdeck/ directory "
    "(e.g. .agentdeck/mine.yaml)"
)


def names_a_file(ref: str) -> bool:
    """Whether ``ref`` is a profile file's path rather than a built-in's name."""
    return any(marker in ref for marker in _FILE_MARKERS)


def names_a_builtin(ref: str) -> bool:
    """Whether ``ref`` could be a built-in's name: a plain word, no path."""
    return bool(ref) and not names_a_file(ref) and set(ref) <= _NAME_CHARS


def project_file(ref: str, suffixes: tuple[str, ...] = (".yaml", ".yml", ".json")) -> str | None:
    """The file name in the project's ``.agentdeck/`` that ``ref`` names
    (``.agentdeck/mine.yaml`` → ``mine.yaml``), or None when it names no such
    file: one plain name straight below that directory, with one of ``suffixes``."""
    head, _, name = ref.partition("/")
    if head != PROJECT_DIR or not name or name.startswith("."):
        return None
    if not set(name) <= _NAME_CHARS or not name.endswith(suffixes):
        return None
    return name


def accepted_elsewhere(ref: str) -> bool:
    """Whether ``ref`` may be chosen by someone other than the CLI's user."""
    return names_a_builtin(ref) or project_file(ref) is not None
