"""The rules behind ``core.redact``: the patterns, what each keeps, and the value rule.

Pure, stdlib only. ``core.redact`` says what is found and runs these where cheap
scans say they could match; each rule here is also correct run over a whole text
(the tests hold the driver to exactly that).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

MARK = "[REDACTED:{}]"
MARK_START = "[REDACTED:"

PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*+)",
    re.DOTALL,
)


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/?#@]{0,256}+:)"
    r"([^\s@]{1,256}+)@"
)
_PORT_PATH = re.compile(r"[0-9]{1,5}(?:[/?#]|$)")
CURL_USER = re.compile(
    r"(?<![\w-])((?:-u|--user)(?:[ \t]++|=)[\"']?[^\s:\"']{1,256}+:)([^\s\"']++)"
)
_CURL_LOOK = 300  # how far back on the line ``curl`` may be, for ``-u user:password``
# ``curl -H "X-API-Key: v" https://…``, ``wget --header=…``, httpie's ``X-API-Key:v``: a
# header argument, not prose, however the line goes on.
_HEADER_FLAG = re.compile(r"(?<![\w-])(?:-H|--header)(?:[ \t]++|=)[\"']?\Z")
_HTTPIE = re.compile(r"(?<![\w/.-])(?:http|https|xh|xhs)[ \t]")
# A password flag's value: ``-phunter2``, ``-p 'x y'``, ``--password=x``; its command decides.
CLI_PASSWORD = re.compile(
    r"(?<![\w-])(-p|-a|--password|--pass)(=|[ \t]++)?+(?!-|\\[\"']|'\"'\"')"
    r"(\"[^\"\n]{1,256}+\"|'[^'\n]{1,256}+'|[^\s\"';|&<>()`]{1,256}+)"
)
_COMMAND = re.compile(  # the commands whose flags are known, and some that reset the line
    r"(?<![\w/.-])(mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|"
    r"mariadb-dump|docker|podman|nerdctl|buildah|skopeo|helm|oras|sshpass|redis-cli|mongo|"
    r"mongosh|mongodump|mongorestore|mongoexport|mongoimport|ssh|scp|sftp|rsync|psql|pg_dump|"
    r"kubectl|curl|wget)(?![\w-])"
)
_LOGIN = re.compile(r"(?<![\w-])login(?![\w-])")
_SEPARATORS = re.compile(r"[;|&\n(`]")
# ``.netrc``: ``machine h login u password p``, on one line or several.
# Between its words: white space, and the Read tool's line numbers after a newline.
_NETRC_GAP = r"(?:\n[ \t]*+[0-9]{1,9}+(?:\t|→)|\s)++"
NETRC = re.compile(
    r"(?<![^\s\"'→])((?:machine[ \t]++\S{1,256}+|default)"
    r"(?:"
    + _NETRC_GAP
    + r"(?:login|account|port)[ \t]++\S{1,256}+){0,3}+"
    + _NETRC_GAP
    + r"password[ \t]++)([^\s\"']{1,256}+)"
)
# ``.pgpass``: ``host:port:database:user:password``, a line of its own (or quoted).
# What the Read tool puts before each line of a file: ``12\t`` (or ``    12→``).
_LINE_NUMBER = r"(?:[ \t]*+[0-9]{1,9}+(?:\t|→))?+"
PGPASS = re.compile(
    r"(?:(?m:^)"
    + _LINE_NUMBER
    + r"[ \t]*+|(?<=[\"']))([^\s:#\"']{1,256}+:(?:[0-9]{1,5}|\*):[^\s:]{1,256}+:"
    r"[^\s:]{1,256}+:)((?:\\.|[^\s:\\\"']){1,256}+)(?=[\"']|[ \t]*+(?:\n|\Z))"
)
_READ_PREFIX = re.compile(r"\A" + _LINE_NUMBER)
_HEX_FIELD = re.compile(r"[0-9A-Fa-f]{1,4}")  # ``fe80:1:2:3:4``, ``12:30:45:00:01``
AUTH_HEADER = re.compile(
    r"(?<![\w-])((?:proxy-)?authorization[\"']?[ \t]{0,8}+[:=][ \t]{0,8}+[\"']?"
    r"(?:(bearer|basic|token|digest|negotiate|bot)[ \t]++)?)([^\s\"',;]++)",
    re.IGNORECASE,
)
_SCHEMES = {"bearer", "basic", "token", "digest", "negotiate", "bot"}
BEARER = re.compile(r"(?<![\w-])((?:[Bb]earer|BEARER)[ \t]++)([A-Za-z0-9._~+/-]{12,}+=*+)")

# An assignment is found in two steps: the name and separator, then (for a secret name
# only) the value. A name that is no secret consumes nothing more, so the value is
# still searched: ``note: DB_PASSWORD=x``.
NAME_SEP = re.compile(
    r"(?<![\w.])(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.-]{0,63}+)(?P=q)"
    r"(?P<sep>[ \t]{0,8}+(?::=|=>|=(?!=)|:(?![:=]))[ \t]{0,8}+)"
)
VALUE = re.compile(  # a string (with Python's prefix: f"…") or a bare word
    r"(?P<prefix>(?i:[rbuf]|rb|br|fr|rf)(?=[\"']))?"
    r"(?:\"(?:[^\"\\\n]++|\\.)*+\"?|'(?:[^'\\\n]++|\\.)*+'?|`[^`\n]*+`?|[^\s\"'`,;&\\]++)"
)
COOKIE_HEADER = re.compile(  # ``Cookie: a=1; b=2``, not ``the login cookie: the one``
    r"(?<![\w-])((?:set-)?cookie[ \t]{0,8}+:[ \t]{0,8}+)(?=[^\s=;,]{1,256}+=)([^\r\n]++)",
    re.IGNORECASE,
)
_SMALL_NUMBER = re.compile(r"[+-]?[0-9]{1,6}(?:\.[0-9]+)?")

# The name's last word (or last two) decides; camelCase and digits are split off first.
_SECRET_WORDS = frozenset((
    "PASSWORD", "PASSWD", "PWD", "PASS", "PASSPHRASE", "PASSCODE", "SECRET", "SECRETS", "TOKEN",
    "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "AUTHTOKEN", "ACCESSTOKEN", "REFRESHTOKEN",
    "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH",
))  # fmt: skip
_KEY_QUALIFIERS = frozenset((
    "API", "ACCESS", "SECRET", "PRIVATE", "SIGNING", "ENCRYPTION", "MASTER", "ACCOUNT", "AUTH",
    "APP", "LICENSE",
))  # fmt: skip
# Words after the secret word that leave it a secret: ``API_TOKEN_V2``, ``SECRET_KEY_BASE``.
_AFTER_SECRET = frozenset((
    "V", "VER", "BASE", "OLD", "NEW", "PREV", "PREVIOUS", "CURRENT", "PROD", "PRODUCTION", "DEV",
    "STAGING", "STAGE", "TEST", "LIVE", "PRIMARY", "SECONDARY", "BACKUP", "VALUE", "RAW", "ENCODED",
))  # fmt: skip
# One word ending with a secret word: ``PGPASSWORD``, ``apitoken`` (not ``bypass``).
_ENDS_SECRET = re.compile(r"[A-Z]{2,}(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT = re.compile(r"[^A-Za-z]+")

_KEYWORDS = frozenset((
    "true", "false", "none", "null", "nil", "undefined", "yes", "no", "on", "off", "required",
    "optional", "str", "string", "bytes", "int", "integer", "float", "number", "bool", "boolean",
    "any", "object", "dict", "list", "secretstr", "secretbytes",
))  # fmt: skip
_EXPRESSION = re.compile(r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+[(\[]")
_DOTTED = re.compile(r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*+")
_PLACEHOLDER = re.compile(r"\$[A-Za-z_{(]|%\(|<|\{|\*+$|(?:[xX]{3,}|\.{3,}|…+)$")
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_LINE_LOOK = 200  # how far to look for the end of a ``NAME: value`` line


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable, key or header NAME says its value is a secret."""
    words = [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", name).upper()) if w]
    if not words:
        return False
    if name == "PWD":  # the shell's working directory, not a password
        return False
    if words[-2:] == ["KEY", "DATA"]:  # kubeconfig's ``client-key-data``: a PEM key
        return True
    while len(words) > 1 and words[-1] in _AFTER_SECRET:
        words.pop()
    last = words[-1]
    if last in _SECRET_WORDS or _ENDS_SECRET.fullmatch(last):
        return True
    return last == "KEY" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS


def _is_placeholder(value: str) -> bool:
    return not value.strip() or value.startswith(MARK_START) or bool(_PLACEHOLDER.match(value))


def _trim_closers(value: str) -> tuple[str, str]:
    """``hunter2)`` in ``f(password=hunter2)``: the unbalanced closers are not the value."""
    excess = {c: value.count(c) - value.count(o) for c, o in _CLOSERS.items()}
    end = len(value)
    while end and excess.get(value[end - 1], 0) > 0:
        excess[value[end - 1]] -= 1
        end -= 1
    return value[:end], value[end:]


def _is_code(value: str, name: str, after: str) -> bool:
    if _is_placeholder(value) or value[0] in "{[(":
        return True
    if value.lower() in _KEYWORDS or _SMALL_NUMBER.fullmatch(value):
        return True
    if _EXPRESSION.match(value) or _DOTTED.fullmatch(value):
        return True
    if _IDENTIFIER.fullmatch(value):
        same = value.lower() == name.rsplit(".", 1)[-1].lower()  # self.token = token
        return same or after[:1] in (",", ")")
    return False


def _line_goes_on(text: str, end: int) -> bool:
    """More words after ``NAME: value`` on its line: prose or a type hint, not YAML."""
    rest = text[end : end + _LINE_LOOK]
    line = rest.split("\n", 1)[0].strip()
    if not line.strip("\"'\\"):  # the quote that closes an argument: ``'token: v'``
        return False
    return bool(line) and not line.startswith("#")


def _even_backslashes(text: str) -> bool:
    """Whether the quote after ``text`` is a real one, not escaped (``\\"``)."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 0


def redact_value(m: re.Match[str], found: re.Match[str]) -> str:
    """The value after a secret name, redacted or kept (see the module's value rule)."""
    mark = MARK.format("assignment")
    prefix = found["prefix"] or ""
    text, end = found[0], found.end()
    value = text[len(prefix) :]
    quote = value[0]
    if _escaped_quote(m.string, found.start(), end):
        return text  # ``'"'"'`` or ``\"``: a quote of an escaped text, read unescaped
    in_string = not m["q"] and not prefix and m.start() and m.string[m.start() - 1] == quote
    if in_string and not _argument_value(value, m.string[end : end + 1]):
        return text  # ``input('Password: ')``: the name is in a string, that quote ends it
    if quote in "\"'`":
        body = value[1:-1]
        closed = len(value) > 1 and value.endswith(quote) and _even_backslashes(body)
        inner = body if closed else value[1:]
        if _is_placeholder(inner) or ("f" in prefix.lower() and "{" in inner):
            return text  # a reference, or an f-string template
        if inner[:1].isspace():
            return text  # ``"/login?token=" in out``: the quote ends an enclosing string
        return prefix + quote + mark + (quote if closed else "")
    core, tail = _trim_closers(value)
    if not core:
        return text
    after = tail or m.string[end : end + 1]
    if _is_code(core, m["name"], after):
        return text
    prose = ":" in m["sep"] and "=" not in m["sep"] and _line_goes_on(m.string, end)
    prose = prose and not _closes_argument(m, end)
    if prose and not _header_arg(m):
        return text
    return mark + tail


def _escaped_quote(text: str, start: int, end: int) -> bool:
    """The value at ``text[start:end]`` is a piece of an escaped quote (``'"'"'`` or
    ``\\"``), or is followed by one: the text read unescaped has the value whole."""
    if text.startswith("'\"'\"'", start) or (start and text.startswith("\"'\"'", start - 1)):
        return True
    return text[end : end + 2] in ('\\"', "\\'") or text.startswith("'\"'\"'", end)


_ARGUMENT_ENDS = ("", " ", "\t", "\n", ";", "`")


def _closes_argument(m: re.Match[str], end: int) -> bool:
    """``'token: v' 'next'``: the quote before the name (or before the line, for a
    YAML key) closes after the value, so the value ends a quoted argument; what
    follows is another argument, not prose. So does a quote that ends the command
    (``'token: v';``) or a command quoted in text (a reason's ``command `… 'token: v'```)."""
    text = m.string
    quote = text[end : end + 1]
    if quote not in ("'", '"') or m["q"] or text[end + 1 : end + 2] not in _ARGUMENT_ENDS:
        return False
    before = _line_before(text, m.start())
    return before.endswith(quote) or not before.strip()  # opened there, or a YAML key


def _argument_value(value: str, after: str) -> bool:
    """``'password: 'x''`` (a quoted argument, read unescaped): the value is whole, a
    closed quote with a body, followed by the argument's end; not ``input('Password: ')``."""
    quote, body = value[0], value[1:-1]
    closed = len(value) > 2 and value.endswith(quote) and body[0] not in " \t)]},;+"
    return closed and after in ("", " ", "\t", "'", '"')


def _line_before(text: str, pos: int) -> str:
    return text[max(0, pos - _CURL_LOOK) : pos].rsplit("\n", 1)[-1]


def _header_arg(m: re.Match[str]) -> bool:
    """``-H "X-API-Key: v"`` (curl, wget) or ``X-API-Key:v`` (httpie): a header, not prose."""
    before = _line_before(m.string, m.start())
    if _HEADER_FLAG.search(before):
        return True
    bare = not m["q"] and m["sep"] == ":" and before[-1:] in (" ", "\t")
    return bare and bool(_HTTPIE.search(before))


def keep_group(kind: str, group: int) -> Callable[[re.Match[str]], str]:
    """Replace group ``group`` (the secret), keeping what precedes it in the match."""

    def replace(m: re.Match[str]) -> str:
        secret = m[group]
        if _is_placeholder(secret) or secret.lower() in _SCHEMES or MARK_START in m[1]:
            return m[0]  # a reference, or a user part that is itself a redacted token
        return (
            m[0][: m.start(group) - m.start()]
            + MARK.format(kind)
            + m[0][m.end(group) - m.start() :]
        )

    return replace


def redact_auth_header(m: re.Match[str]) -> str:
    value, scheme = m[3], (m[2] or "").lower()
    if len(value) < 8 or _EXPRESSION.match(value) or _DOTTED.fullmatch(value):
        return m[0]  # ``"Authorization": token`` is code, not a credential
    return keep_group("basic-auth" if scheme == "basic" else "bearer", 3)(m)


def redact_bearer(m: re.Match[str]) -> str:
    token = m[2]
    if not (_has_digit(token) or len(token) >= 32):  # "Bearer authentication" is prose
        return m[0]
    return m[1] + MARK.format("bearer")


def redact_url_credentials(m: re.Match[str]) -> str:
    if _PORT_PATH.match(m[2]):  # ``https://host:8080/a@b``: a port and a path, no password
        return m[0]
    return keep_group("password", 2)(m)


def redact_curl_user(m: re.Match[str]) -> str:
    line = m.string[max(0, m.start() - _CURL_LOOK) : m.start()].rsplit("\n", 1)[-1]
    if not re.search(r"(?<![\w-])curl\s", line):  # ``docker run -u 1000:1000`` is no password
        return m[0]
    return keep_group("password", 2)(m)


def redact_cli_password(m: re.Match[str]) -> str:
    """A password flag's value, if the command on the line takes one there.

    mysql: ``-phunter2`` only (``-p db`` prompts, db is a database); docker (podman,
    helm registry…) login: ``-p``, ``--password``; sshpass: ``-p``; redis-cli: ``-a``,
    ``--pass``; mongo: ``-p``, ``--password``. ``ssh -p 22``, ``docker run -p 80:80`` stay.
    """
    flag, attached = m[1], m[2] is None
    segment = _SEPARATORS.split(_line_before(m.string, m.start()))[-1]
    commands = _COMMAND.findall(segment)
    command = commands[-1] if commands else ""
    if command.startswith(("mysql", "mariadb")):
        ok = flag == "-p" and attached
    elif command in ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras"):
        ok = flag in ("-p", "--password") and bool(_LOGIN.search(segment))
    elif command == "sshpass":
        ok = flag == "-p"
    elif command == "redis-cli":
        ok = flag in ("-a", "--pass")
    elif command.startswith("mongo"):
        ok = flag in ("-p", "--password")
    else:
        ok = False
    if not ok or (attached and flag != "-p"):
        return m[0]
    value = m[3]
    quote = value[0] if value[0] in "\"'" else ""
    if _is_placeholder(value.strip(quote)):
        return m[0]
    return m[1] + (m[2] or "") + quote + MARK.format("password") + quote


def redact_netrc(m: re.Match[str]) -> str:
    """``machine`` starts its line, or the entry names its ``login``: not prose."""
    entry = m[1]
    line_start = not _READ_PREFIX.sub("", _line_before(m.string, m.start())).strip(" \t\"'")
    if not (line_start or re.search(r"\s(?:login|account)\s", entry)):
        return m[0]
    return keep_group("password", 2)(m)


def redact_pgpass(m: re.Match[str]) -> str:
    fields = (m[1] + m[2]).split(":")  # not the Read tool's line number
    if all(_HEX_FIELD.fullmatch(f.strip()) for f in fields):
        return m[0]  # an IPv6 address, a MAC address, a time
    return keep_group("password", 2)(m)
