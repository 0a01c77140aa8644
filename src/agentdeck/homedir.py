"""Where the home is, without loading the settings.

The CLI's quick path (a steering command against a running daemon) needs only
this of the settings, and loading them costs more than the whole command. The
rule is ``Settings.home``'s: ``AGENTDECK_HOME`` (any case, as pydantic-settings
reads it), else ``~/.agentdeck``; a test holds the two equal.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

DEFAULT_HOME = "~/.agentdeck"


def home_path(environ: Mapping[str, str] | None = None) -> str:
    """The home as absolute text (what ``pathlib``'s ``expanduser().resolve()`` gives,
    without importing it: the quick path needs no more)."""
    env = os.environ if environ is None else environ
    lowered = {k.lower(): v for k, v in env.items()}
    return os.path.realpath(os.path.expanduser(lowered.get("agentdeck_home", DEFAULT_HOME)))


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(home_path(environ))
