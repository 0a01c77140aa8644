"""What memory may keep of a text: secrets redacted, ``<private>`` parts dropped.

Pure, stdlib only. ``redact`` replaces each secret with ``[REDACTED:<kind>]``
and keeps the text around it; ``strip_private`` drops what the user marked
``<private>…</private>``; ``scrub`` does both, ``scrub_value`` does it through
dicts and lists. Secrets are found two ways:

* **By shape**: tokens whose format names their issuer (Anthropic, OpenAI, AWS,
  GitHub, GitLab, Slack, Google, Stripe, npm, PyPI, Hugging Face), JWTs (also
  glued after other text, ``x_ghp_…``, ``abcAKIA…``: ``core.redact_tokens``), PEM
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

A quoted argument is read as the shell reads it too: a line holding an escaped
quote or newline (``'"'"'`` from ``shlex.quote``, ``\\"`` in double quotes or JSON,
``\\'`` and ``\\n`` in ``$'…'``) is also read unescaped, and what is found there is
redacted in the line (``printf %s 'client_secret: '"'"'[REDACTED:assignment]'"'"''``).
A value that a closing quote follows (``echo 'token: v'``) is no prose.

Everything else (``DB_PASSWORD=hunter2``, ``password: hunter2``,
``aws_secret_access_key = wJalr…``) is redacted. The rule leans to redacting:
``password = pw`` in code is redacted too.

Every pattern runs in linear time: quantifiers are bounded or possessive
(Python 3.11), so a megabyte of adversarial text costs one pass per pattern.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from agentdeck.core.private import strip_private
from agentdeck.core.redact_rules import (
    AUTH_HEADER,
    BEARER,
    CLI_PASSWORD,
    COOKIE_HEADER,
    CURL_USER,
    MARK,
    MARK_START,
    NAME_SEP,
    NETRC,
    PGPASS,
    PRIVATE_KEY,
    URL_CREDENTIALS,
    VALUE,
    is_secret_name,
    keep_group,
    redact_auth_header,
    redact_bearer,
    redact_cli_password,
    redact_curl_user,
    redact_netrc,
    redact_pgpass,
    redact_url_credentials,
    redact_value,
)
from agentdeck.core.redact_tokens import tokens as _tokens

# -- the driver: cheap scans find the lines a rule could match, rules run only there --
#
# Python's ``re`` costs ~10 ms per MiB for any pattern that must be tried at every
# position; ``bytes.find``, ``bytes.translate`` and a pattern with a literal prefix
# cost well under 1 ms. So each rule has cheap anchors (substrings it cannot match
# without); one set of scans marks the lines where anchors occur, and each marked
# line goes through its rules, in the order above (URL credentials, curl, headers,
# password flags, .pgpass, assignments), after the tokens (``core.redact_tokens``,
# over the text, found by scans of their own): a text holding no anchor pays the
# scans alone. Every rule but the private key and ``.netrc`` (run first, over the
# text) stays within a line, so a rule run over one line finds what it would over
# the text. Anchors are found in ``low``: the text encoded one byte per character
# (latin-1, others as ``?``) and ASCII-lower-cased, whose offsets are the text's.

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
    (_RU, URL_CREDENTIALS, redact_url_credentials),
    (_RC, CURL_USER, redact_curl_user),
    (_RA, AUTH_HEADER, redact_auth_header),
    (_RK, COOKIE_HEADER, keep_group("cookie", 2)),
    (_RB, BEARER, redact_bearer),
    (_RP, CLI_PASSWORD, redact_cli_password),
    (_RG, PGPASS, redact_pgpass),
)


def _line_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the line(s) holding ``text[start:end]``, without their newlines."""
    last = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if last < 0 else last


def _spliced(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, new)`` (ascending, apart) put in place."""
    if not edits:
        return text
    out: list[str] = []
    done = 0
    for start, end, new in edits:
        out += [text[done:start], new]
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
        while (m := NAME_SEP.search(text, start, end)) and m.start() <= hit:
            out.append(text[pos : m.end()])
            pos = start = m.end()
            value = VALUE.match(text, pos) if is_secret_name(m["name"]) else None
            if value is not None:
                out.append(redact_value(m, value))
                pos = start = value.end()
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


_NETRC_LOOK = 1200  # the longest .netrc entry before its password (machine, 3 fields)


def _netrc_near(text: str) -> str:
    """``.netrc`` entries (over several lines), read from a line start well before
    each ``password`` up to the end of its line; overlapping regions read as one."""
    regions: list[list[int]] = []
    at = text.find("password")
    while at >= 0:
        start = text.rfind("\n", 0, max(0, at - _NETRC_LOOK)) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if regions and start <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], end)
        else:
            regions.append([start, end])
        at = text.find("password", end if end > at else at + 1)
    out: list[str] = []
    done = 0
    for start, end in regions:
        out += [text[done:start], NETRC.sub(redact_netrc, text[start:end])]
        done = end
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


# -- escaped text: a shell-quoted, double-quoted or ``$'…'`` argument, a JSON string --
#
# A quote inside a quoted argument is written ``'"'"'`` (``shlex.quote``), ``\"`` or
# ``\'``, and a newline ``\n``: the rules, which read quotes and lines, would see
# them wrong (``client_secret: '"'"'x'"'"'``). So a line holding an escape is also
# read unescaped (each escape as the character it stands for), and what the rules
# redact there is redacted in the line, escapes and all.
_ESCAPE = re.compile(r"'\"'\"'|\\[\"'\\$`nt]")
_UNESCAPED = {"'\"'\"'": "'", "\\n": "\n", "\\t": "\t"}
_MARKS = re.compile(r"\[REDACTED:[a-z-]{1,32}\]")


def _unescape(m: re.Match[str]) -> str:
    return _UNESCAPED.get(m[0], m[0][-1])


def _original(line: str, at: int) -> int:
    """Where the character ``at`` of ``line`` read unescaped starts in ``line``."""
    shift = 0
    for m in _ESCAPE.finditer(line):
        if m.start() - shift >= at:
            break
        shift += len(m[0]) - 1
    return at + shift


def _redact_unescaped(line: str, rules: Callable[[str], str]) -> str:
    """What ``rules`` redact in ``line`` read unescaped, redacted in ``line``."""
    view = _ESCAPE.sub(_unescape, line)
    new = rules(view)
    if new == view:
        return line
    parts = _MARKS.split(new)
    pattern = "(.+?)".join(re.escape(part) for part in parts)
    found = re.fullmatch(pattern, view, re.DOTALL)
    if found is None:  # cannot happen: the rules only put marks in place of text
        return line
    out: list[str] = []
    done = 0
    for i, mark in enumerate(_MARKS.findall(new), start=1):
        if found[i] == mark:
            continue  # redacted already
        out += [line[done : _original(line, found.start(i))], mark]
        done = _original(line, found.end(i))
    return "".join([*out, line[done:]])


def redact_escaped(text: str, rules: Callable[[str], str]) -> str:
    """``text`` with what ``rules`` find in its escaped lines, read unescaped, redacted."""
    if "\\" not in text and "'\"'\"'" not in text:
        return text
    edits: list[tuple[int, int, str]] = []
    m = _ESCAPE.search(text)
    while m is not None:
        start, end = _line_around(text, m.start(), m.end())
        m = _ESCAPE.search(text, end)
        line = text[start:end]
        new = _redact_unescaped(line, rules)
        if new is not line:
            edits.append((start, end, new))
    return _spliced(text, edits)


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; idempotent."""
    if _plainly_clean(text):
        return text
    # The rules that span lines first: an escaped line is read unescaped on its own.
    return _redact_lines(redact_escaped(_multiline(text), _redact_plain))


def _multiline(text: str) -> str:
    """Private-key blocks and ``.netrc`` entries: the rules that span lines."""
    if "PRIVATE KEY" in text:
        text = PRIVATE_KEY.sub(MARK.format("private-key"), text)
    if "password" in text and ("machine" in text or "default" in text):
        text = _netrc_near(text)
    return text


def _redact_plain(text: str) -> str:
    """``redact`` but for escaped lines read unescaped."""
    return _redact_lines(_multiline(text))


def _redact_lines(text: str) -> str:
    """The rules that read one line at a time (``_multiline``'s have been applied)."""
    low = _lowered(text)
    tokens = _tokens(text, low)
    if tokens is not text:
        text, low = tokens, _lowered(tokens)
    marks, names = _marks(text, low)
    edits: list[tuple[int, int, str]] = []
    i = n = 0
    while i < len(marks):
        at, bits = marks[i]
        start, end = _line_around(text, at, at)
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
            edits.append((start, end, new))
    return _spliced(text, edits)


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
        if not empty and not (isinstance(item, str) and item.startswith(MARK_START)):
            return MARK.format("assignment")
    return scrub_value(item)
