"""How a profile is named: a built-in's name, or a file's path.

Its own module so that the CLI's quick path can tell them apart without loading the
policy engine or YAML.
"""

from __future__ import annotations

_FILE_MARKERS = ("/", "\\", ".yaml", ".yml", ".json")


def names_a_file(ref: str) -> bool:
    """Whether ``ref`` is a profile file's path rather than a built-in's name."""
    return any(marker in ref for marker in _FILE_MARKERS)
