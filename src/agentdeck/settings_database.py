"""Which database the deck keeps its store in: ``AGENTDECK_DATABASE_URL``.

Unset, the store is the SQLite file in the home (``HomeLayout.db_path``). Set, it
is a PostgreSQL database, written ``postgresql+psycopg://user:password@host:port/db``
(``postgresql://`` is taken to mean the same: psycopg 3 is the one driver). Any
other form is refused with the forms we accept, never echoed back: the URL may
hold a password, so it is shown only through ``hide_password``.

Standard library only: the settings (and the CLI's quick path) read this without
loading SQLAlchemy.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the CLI's quick path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping

DRIVER = "postgresql+psycopg"
ACCEPTED = "postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or postgresql://...)"
POSTGRES_EXTRA = "pip install 'agentdeck[postgres]'"


def normalise(url: str) -> str:
    """The URL with the psycopg 3 driver named; ``ValueError`` naming the accepted
    forms (not the value) when it is not a PostgreSQL URL we can use."""
    from urllib.parse import urlsplit

    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("postgresql", DRIVER, "postgres"):
        raise ValueError(f"not a database URL agentdeck can use; accepted: {ACCEPTED}")
    parts = urlsplit(f"{DRIVER}://{rest}")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ValueError(f"the database URL's port is not a number; accepted: {ACCEPTED}") from None
    if not parts.hostname and "host=" not in parts.query:
        raise ValueError(f"the database URL names no host; accepted: {ACCEPTED}")
    if not parts.path.strip("/"):
        raise ValueError(f"the database URL names no database; accepted: {ACCEPTED}")
    return f"{DRIVER}://{rest}"


def url_in(environ: Mapping[str, str]) -> bool:
    """Whether the environment sets ``AGENTDECK_DATABASE_URL`` (any case, as the
    settings read it): for the CLI's quick path, which does not load them."""
    return any(k.lower() == "agentdeck_database_url" and v for k, v in environ.items())


def is_database_url(value: object) -> bool:
    """A URL rather than a file's path (anything with a scheme: ``x://``)."""
    return isinstance(value, str) and "://" in value


def hide_password(url: str) -> str:
    """The URL as it may be shown or logged: a password becomes ``***``, in the
    address (``user:pw@``) or in the query (libpq's ``?password=``)."""
    import re
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        password = parts.password
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<a database URL that cannot be parsed>"
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    netloc = parts.netloc
    if password:
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{parts.username or ''}:***@{host}{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def describe(url: str) -> str:
    """``host:port/database`` of a PostgreSQL URL, for messages (no user, no password)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<a database URL that cannot be parsed>"
    host = parts.hostname or "localhost"
    return f"PostgreSQL database {parts.path.lstrip('/')} on {host}{port}"
