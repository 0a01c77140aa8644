"""The deck a quick command talks to: the one ``AGENTDECK_URL`` and
``AGENTDECK_TOKEN`` name, when set, else the daemon of this home.

The URL and token are read as the settings read them (any case) and checked by
the rule ``cli.decks.by_url`` applies, the hook client's (``hookclient_http``):
a refused one is a ``ConfigError`` in its words, before anything is sent. A deck
asked for by URL is never swapped for the home's: one that does not answer, or
refuses the token, is the command's error.
"""

from __future__ import annotations

import os

from agentdeck.client.quick import Address, Daemon, connect
from agentdeck.errors import ConfigError

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def named(environ: Mapping[str, str] | None = None) -> Address | None:
    """The deck ``AGENTDECK_URL`` names, or None when it is unset."""
    found = _named(environ)
    return None if found is None else found[0]


def reach(home_dir: str | Path, environ: Mapping[str, str] | None = None) -> Daemon | None:
    """The deck ``AGENTDECK_URL`` and ``AGENTDECK_TOKEN`` name when set; else the
    daemon of ``home_dir``; None when neither."""
    found = _named(environ)
    if found is not None:
        return Daemon(*found)
    return connect(home_dir)


def _named(environ: Mapping[str, str] | None) -> tuple[Address, str] | None:
    env = os.environ if environ is None else environ
    lowered = {k.lower(): v for k, v in env.items()}
    url = lowered.get("agentdeck_url", "")
    if not url:
        return None
    from agentdeck.hooks.hookclient_http import INSECURE_ENV, Refused, configured

    given = {
        "AGENTDECK_URL": url,
        "AGENTDECK_TOKEN": lowered.get("agentdeck_token", ""),
        INSECURE_ENV: lowered.get(INSECURE_ENV.lower(), ""),
    }
    try:
        found = configured(given)
    except Refused as exc:
        raise ConfigError(str(exc)) from None
    assert found is not None  # a URL was given
    (scheme, host, port, path), token = found
    return Address(scheme, host, port, path), token
