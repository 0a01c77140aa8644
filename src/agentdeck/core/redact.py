"""What memory may keep of a text: secrets redacted, ``<private>`` parts dropped.

Pure, stdlib only. ``redact`` replaces each secret with ``[REDACTED:<kind>]``
and keeps the text around it; ``strip_private`` drops what the user marked
``<private>…</private>``; ``scrub`` does both, ``scrub_value`` does it through
dicts and lists. Secrets are found two ways:

* **By shape**: tokens whose format names their issuer (Anthropic, OpenAI, AWS,
  GitHub, GitLab, Slack, Google, Stripe, npm, PyPI, Hugging Face), JWTs, PEM
  private-key blocks (an unterminated block is redacted to the end),
  ``Authorization:`` header values, ``Bearer <token>``, ``Cookie:`` headers,
  the password of ``scheme://user:password@host`` and of ``curl -u user:password``,
  ``.netrc`` entries (``machine h login u password p``), ``.pgpass`` lines
  (``host:port:db:user:password``), and password flags where the command takes
  one (``mysql -pX``, ``docker login -p X``, ``sshpass -p X``, ``redis-cli -a X``).
* **By name**: ``NAME=value``, ``export NAME="value"``, ``NAME: value``,
  ``"name": "value"``, ``name => 'value'`` where the NAME's last word is a
  secret word (``DB_PASSWORD``, ``apiKey``, ``x-api-key``, ``client_secret``,
  ``GITHUB_TOKEN``, ``aws_secret_access_key``, ``Pwd`` in a connection
  string…) or ends with one (``PGPASSWORD``), maybe followed by a version or
  stage (``API_TOKEN_V2``, ``SECRET_KEY_BASE``, ``DB_PASSWORD_OLD``); also
  kubeconfig's ``client-key-data``. ``token_count``, ``TOKENIZER``,
  ``password_field``, ``max_tokens``, ``TOKEN_TTL_SECONDS`` are not secret names:
  what the name ends with decides.

The value rule, for a secret name. A quoted value is a literal and is redacted
(keeping the quotes) unless it is empty, a placeholder (``"${DB_PASSWORD}"``,
``"<token>"``, ``"{{ secret }}"``, ``"***"``, ``"…"``), an f-string template
(``f"Bearer {token}"``), or an unclosed quote followed by a space (``"/login?
token=" in out``: that quote closes an enclosing string). An unquoted value is
redacted unless it is code or not a value at all:

* a reference or placeholder: ``$VAR``, ``${…}``, ``$(…)``, ``%(x)s``, ``<…>``,
  ``***``; a structure ``{``, ``[``, ``(`` (its own secrets are found by the
  other rules); a keyword or type name (``None``, ``true``, ``str``); a number
  of at most six digits (``3.5``, ``4096``: a setting; longer ones may be PINs
  or ids and are redacted);
* an expression: a call or subscript (``getpass()``, ``os.environ["X"]``) or a
  dotted name (``form.password``, ``settings.SECRET_KEY``);
* a bare identifier that repeats the name (``password=password``,
  ``self.token = token``) or is a keyword argument (``login(password=pw)``,
  ``f(token=tok, …)``);
* with ``NAME: value``, a value followed by more words on the line: that is
  prose or a type hint (``password: the user's password``, ``token: str = ""``),
  not YAML; except a header argument of a command (``curl -H "X-API-Key: v"
  https://…``, ``wget --header=…``, httpie's ``X-API-Key:v``).

Everything else (``DB_PASSWORD=hunter2``, ``password: hunter2``,
``aws_secret_access_key = wJalr…``) is redacted. The rule leans to redacting:
``password = pw`` in code is redacted too.

Every pattern runs in linear time: quantifiers are bounded or possessive
(Python 3.11), so a megabyte of adversarial text costs one pass per pattern.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from agentdeck.core.private import strip_private

MARK = "[REDACTED:{}]"
_MARK_START = "[REDACTED:"

# A token starts where no token character precedes it: "sk-" inside "task-x" is no key.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*+)",
    re.DOTALL,
)


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _mixed(token: str) -> bool:
    """A generated key has digits and capitals; ``sk-some-kebab-name`` has not."""
    return _has_digit(token) and any(c.isupper() for c in token)


def _has_upper(token: str) -> bool:
    return any(c.isupper() for c in token)


_Check: TypeAlias = Callable[[str], bool] | None

# (kind, pattern, check on the whole match), one alternation: one pass over the text.
# Order matters where prefixes overlap: sk-ant- before sk-.
_TOKEN_FAMILIES: tuple[tuple[str, str, _Check], ...] = (
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}+", None),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}+", _mixed),
    ("aws-key", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", None),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{30,}+", None),
    ("github-token", r"github_pat_[A-Za-z0-9_]{30,}+", None),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}+", None),
    ("slack-token", r"xox[abeprs]-[A-Za-z0-9-]{10,}+", None),
    ("slack-token", r"xapp-[0-9]-[A-Za-z0-9-]{10,}+", None),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+", None),
    ("google-key", r"AIza[0-9A-Za-z_-]{35}" + _E, None),
    ("google-token", r"ya29\.[0-9A-Za-z_-]{20,}+", None),
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}+", None),
    ("stripe-key", r"whsec_[0-9A-Za-z]{20,}+", None),
    ("npm-token", r"npm_[A-Za-z0-9]{36}" + _E, None),
    ("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}+", None),
    ("huggingface-token", r"hf_[A-Za-z0-9]{34}" + _E, _has_upper),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+", None),
)
_TOKEN_STARTS = "Aeghnprswxy"  # the first letters of the families above
_TOKENS = re.compile(  # the first-character test first: most positions stop there
    f"(?=[{_TOKEN_STARTS}])"
    + _B
    + "(?:"
    + "|".join(f"(?P<t{i}>{p})" for i, (_, p, _c) in enumerate(_TOKEN_FAMILIES))
    + ")"
)


def _token(m: re.Match[str]) -> str:
    kind, _, check = _TOKEN_FAMILIES[int((m.lastgroup or "t0")[1:])]
    return m[0] if check is not None and not check(m[0]) else MARK.format(kind)


_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/?#@]{0,256}+:)"
    r"([^\s@]{1,256}+)@"
)
_PORT_PATH = re.compile(r"[0-9]{1,5}(?:[/?#]|$)")
_CURL_USER = re.compile(
    r"(?<![\w-])((?:-u|--user)(?:[ \t]++|=)[\"']?[^\s:\"']{1,256}+:)([^\s\"']++)"
)
_CURL_LOOK = 300  # how far back on the line ``curl`` may be, for ``-u user:password``
# ``curl -H "X-API-Key: v" https://…``, ``wget --header=…``, httpie's ``X-API-Key:v``: a
# header argument, not prose, however the line goes on.
_HEADER_FLAG = re.compile(r"(?<![\w-])(?:-H|--header)(?:[ \t]++|=)[\"']?\Z")
_HTTPIE = re.compile(r"(?<![\w/.-])(?:http|https|xh|xhs)[ \t]")
# A password flag's value: ``-phunter2``, ``-p 'x y'``, ``--password=x``; its command decides.
_CLI_PASSWORD = re.compile(
    r"(?<![\w-])(-p|-a|--password|--pass)(=|[ \t]++)?+(?!-)"
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
_NETRC = re.compile(
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
_PGPASS = re.compile(
    r"(?:(?m:^)"
    + _LINE_NUMBER
    + r"[ \t]*+|(?<=[\"']))([^\s:#\"']{1,256}+:(?:[0-9]{1,5}|\*):[^\s:]{1,256}+:"
    r"[^\s:]{1,256}+:)((?:\\.|[^\s:\\\"']){1,256}+)(?=[\"']|[ \t]*+(?:\n|\Z))"
)
_READ_PREFIX = re.compile(r"\A" + _LINE_NUMBER)
_HEX_FIELD = re.compile(r"[0-9A-Fa-f]{1,4}")  # ``fe80:1:2:3:4``, ``12:30:45:00:01``
_AUTH_HEADER = re.compile(
    r"(?<![\w-])((?:proxy-)?authorization[\"']?[ \t]{0,8}+[:=][ \t]{0,8}+[\"']?"
    r"(?:(bearer|basic|token|digest|negotiate|bot)[ \t]++)?)([^\s\"',;]++)",
    re.IGNORECASE,
)
_SCHEMES = {"bearer", "basic", "token", "digest", "negotiate", "bot"}
_BEARER = re.compile(r"(?<![\w-])((?:[Bb]earer|BEARER)[ \t]++)([A-Za-z0-9._~+/-]{12,}+=*+)")

# An assignment is found in two steps: the name and separator, then (for a secret name
# only) the value. A name that is no secret consumes nothing more, so the value is
# still searched: ``note: DB_PASSWORD=x``.
_NAME_SEP = re.compile(
    r"(?<![\w.])(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.-]{0,63}+)(?P=q)"
    r"(?P<sep>[ \t]{0,8}+(?::=|=>|=(?!=)|:(?![:=]))[ \t]{0,8}+)"
)
_VALUE = re.compile(  # a string (with Python's prefix: f"…") or a bare word
    r"(?P<prefix>(?i:[rbuf]|rb|br|fr|rf)(?=[\"']))?"
    r"(?:\"(?:[^\"\\\n]++|\\.)*+\"?|'(?:[^'\\\n]++|\\.)*+'?|`[^`\n]*+`?|[^\s\"'`,;&\\]++)"
)
_COOKIE_HEADER = re.compile(  # ``Cookie: a=1; b=2``, not ``the login cookie: the one``
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
    return not value.strip() or value.startswith(_MARK_START) or bool(_PLACEHOLDER.match(value))


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
    return bool(line) and not line.startswith("#")


def _even_backslashes(text: str) -> bool:
    """Whether the quote after ``text`` is a real one, not escaped (``\\"``)."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 0


def _redact_value(m: re.Match[str], found: re.Match[str]) -> str:
    """The value after a secret name, redacted or kept (see the module's value rule)."""
    mark = MARK.format("assignment")
    prefix = found["prefix"] or ""
    text, end = found[0], found.end()
    value = text[len(prefix) :]
    quote = value[0]
    if not m["q"] and not prefix and m.start() and m.string[m.start() - 1] == quote:
        return text  # ``input('Password: ')``: the name is inside a string, that quote ends it
    if quote in "\"'`":
        body = value[1:-1]
        closed = len(value) > 1 and value.endswith(quote) and _even_backslashes(body)
        inner = body if closed else value[1:]
        if _is_placeholder(inner) or ("f" in prefix.lower() and "{" in inner):
            return text  # a reference, or an f-string template
        if not closed and inner[:1].isspace():
            return text  # ``"/login?token=" in out``: the quote ends an enclosing string
        return prefix + quote + mark + (quote if closed else "")
    core, tail = _trim_closers(value)
    if not core:
        return text
    after = tail or m.string[end : end + 1]
    if _is_code(core, m["name"], after):
        return text
    prose = ":" in m["sep"] and "=" not in m["sep"] and _line_goes_on(m.string, end)
    if prose and not _header_arg(m):
        return text
    return mark + tail


def _line_before(text: str, pos: int) -> str:
    return text[max(0, pos - _CURL_LOOK) : pos].rsplit("\n", 1)[-1]


def _header_arg(m: re.Match[str]) -> bool:
    """``-H "X-API-Key: v"`` (curl, wget) or ``X-API-Key:v`` (httpie): a header, not prose."""
    before = _line_before(m.string, m.start())
    if _HEADER_FLAG.search(before):
        return True
    bare = not m["q"] and m["sep"] == ":" and before[-1:] in (" ", "\t")
    return bare and bool(_HTTPIE.search(before))


def _keep_group(kind: str, group: int) -> Callable[[re.Match[str]], str]:
    """Replace group ``group`` (the secret), keeping what precedes it in the match."""

    def replace(m: re.Match[str]) -> str:
        secret = m[group]
        if _is_placeholder(secret) or secret.lower() in _SCHEMES or _MARK_START in m[1]:
            return m[0]  # a reference, or a user part that is itself a redacted token
        return (
            m[0][: m.start(group) - m.start()]
            + MARK.format(kind)
            + m[0][m.end(group) - m.start() :]
        )

    return replace


def _auth_header(m: re.Match[str]) -> str:
    value, scheme = m[3], (m[2] or "").lower()
    if len(value) < 8 or _EXPRESSION.match(value) or _DOTTED.fullmatch(value):
        return m[0]  # ``"Authorization": token`` is code, not a credential
    return _keep_group("basic-auth" if scheme == "basic" else "bearer", 3)(m)


def _bearer(m: re.Match[str]) -> str:
    token = m[2]
    if not (_has_digit(token) or len(token) >= 32):  # "Bearer authentication" is prose
        return m[0]
    return m[1] + MARK.format("bearer")


def _url_credentials(m: re.Match[str]) -> str:
    if _PORT_PATH.match(m[2]):  # ``https://host:8080/a@b``: a port and a path, no password
        return m[0]
    return _keep_group("password", 2)(m)


def _curl_user(m: re.Match[str]) -> str:
    line = m.string[max(0, m.start() - _CURL_LOOK) : m.start()].rsplit("\n", 1)[-1]
    if not re.search(r"(?<![\w-])curl\s", line):  # ``docker run -u 1000:1000`` is no password
        return m[0]
    return _keep_group("password", 2)(m)


def _cli_password(m: re.Match[str]) -> str:
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


def _netrc(m: re.Match[str]) -> str:
    """``machine`` starts its line, or the entry names its ``login``: not prose."""
    entry = m[1]
    line_start = not _READ_PREFIX.sub("", _line_before(m.string, m.start())).strip(" \t\"'")
    if not (line_start or re.search(r"\s(?:login|account)\s", entry)):
        return m[0]
    return _keep_group("password", 2)(m)


def _pgpass(m: re.Match[str]) -> str:
    fields = (m[1] + m[2]).split(":")  # not the Read tool's line number
    if all(_HEX_FIELD.fullmatch(f.strip()) for f in fields):
        return m[0]  # an IPv6 address, a MAC address, a time
    return _keep_group("password", 2)(m)


# -- the driver: cheap scans find the lines a rule could match, rules run only there --
#
# Python's ``re`` costs ~10 ms per MiB for any pattern that must be tried at every
# position; ``bytes.find``, ``bytes.translate`` and a pattern with a literal prefix
# cost well under 1 ms. So each rule has cheap anchors (substrings it cannot match
# without); one set of scans marks the lines where anchors occur, and each marked
# line goes through its rules, in the order above (tokens, URL credentials, curl,
# headers, password flags, .pgpass, assignments): a text holding no anchor pays the
# scans alone. Every rule but the private key and ``.netrc`` (run first, over the
# text) stays within a line, so a rule run over one line finds what it would over
# the text. Anchors are found in ``low``: the text encoded one byte per character
# (latin-1, others as ``?``) and ASCII-lower-cased, whose offsets are the text's.

_SHAPE = bytes(  # the characters a token is made of, as ``a``; the rest as a space
    0x61 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_-") else 0x20 for i in range(256)
)
# A run of 15+ token characters: every token family starts one (``xoxb-`` and 10 is
# the shortest) but JWTs, ``ya29.`` and Slack webhooks, found by their own anchors (in
# lower case).
_LONG_RUN = re.compile(b"a" * 14 + b"a+")  # a literal prefix (not a{15}): scanned like find
_TOKEN_ANCHORS = (b"eyj", b"ya29.", b"hooks.slack.com")
# How each token family starts: a run starting otherwise is no token.
_TOKEN_HEADS = frozenset((
    "sk", "rk", "AK", "AS", "AB", "AC", "gh", "gi", "gl", "xo", "xa", "ho", "AI", "ya", "wh",
    "np", "py", "hf", "ey",
))  # fmt: skip
# Every secret name holds one of these (see is_secret_name), in any case.
_NAME_WORDS = (b"pass", b"pwd", b"secret", b"token", b"key", b"cred", b"auth")
# A password flag (``-p``, ``-a``, ``--pass…``) not inside a word; a literal prefix.
_FLAG = re.compile(rb"-(?<![\w-]-)(?:[pa]|-pass)")
# What may follow a name word for an assignment to be there: the rest of the name,
# a quote, a separator.
_NAME_THEN_SEP = re.compile(r"[\w.-]{0,64}+[\"']?[ \t]{0,8}+(?::=|=>|=(?!=)|:(?![:=]))")
_NAME_MAX = 64
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PORT_FIELD = re.compile(rb":(?:[0-9]{1,5}|\*):")
# The rules of a line, as bits, in the order they run.
_RT, _RU, _RC, _RA, _RK, _RB, _RP, _RG, _RN = (1 << i for i in range(9))


def _lowered(text: str) -> bytes:
    """``text`` one byte per character, ASCII lower-cased: offsets are the text's."""
    return text.encode("latin-1", "replace").lower()


def _find_all(low: bytes, needle: bytes, bit: int, marks: list[tuple[int, int]]) -> None:
    at = low.find(needle)
    while at >= 0:
        marks.append((at, bit))
        at = low.find(needle, at + 1)


def _marks(text: str, low: bytes) -> tuple[list[tuple[int, int]], list[int]]:
    """(position, rule bit) of every anchor in the text, and the secret words that a
    separator follows (only there can an assignment be)."""
    marks: list[tuple[int, int]] = []
    if b"@" in low:
        _find_all(low, b"://", _RU, marks)
    if b"-u" in low:
        _find_all(low, b"curl", _RC, marks)
    words: list[tuple[int, int]] = []
    for needle in _NAME_WORDS:  # "authorization" starts with "auth"
        _find_all(low, needle, _RN, words)
    if b"authorization" in low:
        marks += [(at, _RA) for at, _ in words if low.startswith(b"authori", at)]
    names = sorted(at for at, _ in words if _NAME_THEN_SEP.match(text, at))
    marks += [(at, _RN) for at in names]
    _find_all(low, b"cookie", _RK, marks)
    _find_all(low, b"bearer", _RB, marks)
    marks += [(m.start(), _RP) for m in _FLAG.finditer(low)]
    if b":" in low:  # a .pgpass entry's port field (or ``*``), between colons
        marks += [(m.start(), _RG) for m in _PORT_FIELD.finditer(low)]
    marks.sort()
    return marks, names


def _line_rules(line: str, bits: int, names: list[int]) -> str:
    """The rules ``bits`` names, over one line, in order; ``names``: where in the
    line a secret word has a separator after it."""
    original = line
    for bit, pattern, repl in _LINE_SUBS:
        if bits & bit:
            line = pattern.sub(repl, line)
    if bits & _RN:
        line = _assignments_at(line, names if line is original else _name_hits(line))
    return line


_LINE_SUBS: tuple[tuple[int, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (_RU, _URL_CREDENTIALS, _url_credentials),
    (_RC, _CURL_USER, _curl_user),
    (_RA, _AUTH_HEADER, _auth_header),
    (_RK, _COOKIE_HEADER, _keep_group("cookie", 2)),
    (_RB, _BEARER, _bearer),
    (_RP, _CLI_PASSWORD, _cli_password),
    (_RG, _PGPASS, _pgpass),
)


def _tokens(text: str, low: bytes) -> str:
    """Issuer tokens, tried where a run of token characters starts (a token starts
    nowhere else), and on the lines of the short families' anchors."""
    out: list[str] = []
    done = 0
    for run in _LONG_RUN.finditer(low.translate(_SHAPE)):
        at = run.start()
        if at < done or text[at : at + 2] not in _TOKEN_HEADS:
            continue
        if (m := _TOKENS.match(text, at)) is not None:
            out += [text[done : m.start()], _token(m)]
            done = m.end()
    if out:
        text = "".join([*out, text[done:]])
        low = _lowered(text)
    if not any(anchor in low for anchor in _TOKEN_ANCHORS):
        return text
    lines = sorted({text.rfind("\n", 0, at) + 1 for at in _anchors(low, _TOKEN_ANCHORS)})
    out, done = [], 0
    for start in lines:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        out += [text[done:start], _TOKENS.sub(_token, text[start:end])]
        done = end
    return "".join([*out, text[done:]])


def _anchors(low: bytes, needles: tuple[bytes, ...]) -> list[int]:
    found: list[tuple[int, int]] = []
    for needle in needles:
        _find_all(low, needle, 0, found)
    return [at for at, _ in found]


def _name_hits(text: str) -> list[int]:
    found = sorted(_anchors(_lowered(text), _NAME_WORDS))
    return [at for at in found if _NAME_THEN_SEP.match(text, at)]


def _assignments_at(text: str, hits: list[int]) -> str:
    """``NAME=value`` rules, tried only at ``hits``: secret words followed by a
    separator, ascending.

    Equivalent to reading every line holding a secret word from its start: a name
    is searched from the start of the word run around the hit (its quote included),
    which is where a line-long scan would be too, since names are whole runs."""
    out: list[str] = []
    pos = 0  # text[:pos] is decided (and in out)
    for hit in hits:
        if hit < pos:
            continue
        # A name is at most 64 characters, so it starts at most that far back (a
        # longer run has no name start in it but after a dash, searched from here).
        start, floor = hit, max(pos, hit - _NAME_MAX)
        while start > floor and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > pos and text[start - 1] in "\"'":
            start -= 1
        # A match starting by the hit ends within _NAME_MAX + 20: search no further.
        end = text.find("\n", hit, hit + _NAME_MAX + 30)
        end = min(len(text), hit + _NAME_MAX + 30) if end < 0 else end
        while (m := _NAME_SEP.search(text, start, end)) and m.start() <= hit:
            out.append(text[pos : m.end()])
            pos = start = m.end()
            value = _VALUE.match(text, pos) if is_secret_name(m["name"]) else None
            if value is not None:
                out.append(_redact_value(m, value))
                pos = start = value.end()
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


_NETRC_LOOK = 1200  # the longest .netrc entry before its password (machine, 3 fields)


def _netrc_near(text: str) -> str:
    """``.netrc`` entries (over several lines), read from a line start well before
    each ``password`` up to the end of its line."""
    out: list[str] = []
    done = 0
    at = text.find("password")
    while at >= 0:
        if at >= done:
            start = max(done, text.rfind("\n", 0, max(0, at - _NETRC_LOOK)) + 1)
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            out += [text[done:start], _NETRC.sub(_netrc, text[start:end])]
            done = end
        at = text.find("password", at + 1)
    out.append(text[done:])
    return "".join(out)


def _plainly_clean(text: str) -> bool:
    """A short text no rule can match: no separator (``:``, ``=``, ``@``), no dash
    (flags, keys, tokens), no ``password`` (.netrc) and no word long enough to be a
    token (the shortest, a JWT, has 11 characters; a bearer token 12)."""
    return (
        len(text) <= _PLAIN_MAX
        and not any(c in text for c in ":=@-")
        and "password" not in text
        and all(len(word) < 11 for word in text.split())
    )


_PLAIN_MAX = 1024


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; idempotent."""
    if _plainly_clean(text):
        return text
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(MARK.format("private-key"), text)
    if "password" in text and ("machine" in text or "default" in text):
        text = _netrc_near(text)
    low = _lowered(text)
    tokens = _tokens(text, low)
    if tokens is not text:
        text, low = tokens, _lowered(tokens)
    marks, names = _marks(text, low)
    out: list[str] = []
    done = 0  # text[:done] is in out
    i = n = 0
    while i < len(marks):
        at, bits = marks[i]
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        i += 1
        while i < len(marks) and marks[i][0] < end:
            bits |= marks[i][1]
            i += 1
        first = n
        while n < len(names) and names[n] < end:
            n += 1
        line = text[start:end]
        new = _line_rules(line, bits, [h - start for h in names[first:n]])
        if new is not line:
            out += [text[done:start], new]
            done = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def scrub(text: str) -> str:
    """What memory may keep of ``text``: ``<private>`` parts dropped, secrets redacted."""
    if len(text) >= _CLEAN_MIN and _is_clean(text):
        return text
    return mark_clean(redact(strip_private(text)))


# Large texts ``scrub`` returned lately (and their cuts), by identity: scrubbing one
# again returns it at once, so a tool output scrubbed where it was cut is not read
# again by the store. Scrubbing is idempotent; a cut was judged with its context.
_CLEAN_MIN, _CLEAN_MAX = 4096, 256 * 1024  # an event's text, not a whole payload
_CLEAN_KEEP = 64
_clean: OrderedDict[int, str] = OrderedDict()
_clean_lock = threading.Lock()


def mark_clean(text: str) -> str:
    """Remember ``text`` as scrubbed (if it is worth it); returns it."""
    if _CLEAN_MIN <= len(text) <= _CLEAN_MAX:
        with _clean_lock:
            _clean[id(text)] = text  # held, so the id is not reused meanwhile
            _clean.move_to_end(id(text))
            while len(_clean) > _CLEAN_KEEP:
                _clean.popitem(last=False)
    return text


def _is_clean(text: str) -> bool:
    with _clean_lock:
        return _clean.get(id(text)) is text


def scrub_value(value: Any) -> Any:
    """``value`` scrubbed through dicts, lists and tuples; other scalars kept.

    Keys are kept; the value of a key that names a secret (``{"api_key": …}``,
    ``{"password": …}``) is redacted whole, unless it is empty, ``None`` or a bool.
    """
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {key: _scrub_item(key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        items = [scrub_value(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _scrub_item(key: Any, item: Any) -> Any:
    if isinstance(key, str) and is_secret_name(key):
        empty = item is None or isinstance(item, bool) or item in ("", [], {}, ())
        if not empty and not (isinstance(item, str) and item.startswith(_MARK_START)):
            return MARK.format("assignment")
    return scrub_value(item)
