"""Tokens whose shape names their issuer, wherever they sit: ``core.redact``'s first rule.

Pure, stdlib only. A token is found wherever its prefix is, also glued after other
token characters (``x_ghp_…``, ``prefix-sk-ant-…``, ``id=abcAKIA…``, ``{"v":
"x_eyJ…"}``): there a stricter check says the body looks generated (a digit or a
capital, not a hash; for ``sk-``, which ends common words, a run of 12 letters and
digits too), so ``my_ghp_`` + a long lower-case word, ``flask-SQLAlchemy-3-1-1-py3``
or an upper-case SHA after ``ACCA`` stay.

Each family is searched on its own (``redact_tokens``, over the whole text), each
search going on from the end of its last match (less the few characters that may
begin the next: ``…ghp_`` glued after a body), and what the families find is
redacted together: a span two find is redacted once. A key of a fixed length ends
where no longer word goes on or another token starts (``…EXAMPLEsk-ant-…``), and a
token right after a redacted one counts as glued, so scrubbing stays idempotent.
``tokens`` finds the same faster: cheap scans say where a family's prefix is, and the
family is tried there only. A check that rejects a body rejects every part of it, so
what a rejected match covers hides no token of its family. Every body is possessive
or bounded: each family costs one pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeAlias

from agentdeck.core.redact_rules import MARK

TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_TOKEN_CHARS = "".join(sorted(TOKEN_CHARS))
# Where a key of a fixed length ends: no longer word goes on, or another token starts
# (``AKIA…EXAMPLEsk-ant-…``: both are redacted, whichever is seen first).
_NEXT = (
    r"(?=sk[-_]|rk_|A(?:KIA|SIA|BIA|CCA|Iza)|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt)-|"
    r"xox[abeprs]-|xapp-|ya29\.|whsec_|npm_|pypi-AgE|hf_|eyJ|https://hooks\.slack\.com/)"
)
_END = r"(?:(?![A-Za-z0-9])|" + _NEXT + ")"
_E = r"(?:(?![A-Za-z0-9_-])|" + _NEXT + ")"
# A token right after one redacted counts as glued, as it was before that was.
_AFTER_MARK = re.compile(r"\[REDACTED:[a-z-]{1,32}\]$")


def _mixed(token: str) -> bool:
    """A generated key has digits and capitals; ``sk-some-kebab-name`` has not."""
    return any(c.isdigit() for c in token) and any(c.isupper() for c in token)


def _has_upper(token: str) -> bool:
    return any(c.isupper() for c in token)


_HEX = re.compile(r"[0-9A-Fa-f]++")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{12}")


def _not_hex(body: str) -> bool:
    """Not a hash (``…ACCA`` and 16 hex digits of an upper-case SHA)."""
    return not _HEX.fullmatch(body)


def _generated(body: str) -> bool:
    """A digit or a capital, and not a hash: ``my_ghp_`` + a lower-case word is no token."""
    return _not_hex(body) and any(c.isdigit() or c.isupper() for c in body)


def _generated_run(body: str) -> bool:
    """``disk-image-Ubuntu-22-04-LTS-amd64`` has no run of 12: no ``sk-`` key."""
    return _generated(body) and _ALNUM_RUN.search(body) is not None


_Check: TypeAlias = Callable[[str], bool] | None


class Family(NamedTuple):
    """A token family: its pattern (the body its group ``b``), a check on the whole
    match, one on the body where it is glued, and how it starts (lower-cased)."""

    kind: str
    pattern: re.Pattern[str]
    check: _Check
    glued: _Check
    heads: tuple[bytes, ...]


def _family(
    kind: str, pattern: str, heads: str, check: _Check = None, glued: _Check = _generated
) -> Family:
    return Family(kind, re.compile(pattern), check, glued, tuple(heads.encode().split()))


TOKEN_FAMILIES: tuple[Family, ...] = (  # a span found by two is named after the first
    _family("anthropic-key", r"sk-ant-(?P<b>[A-Za-z0-9_-]{20,}+)", "sk-", None, _generated_run),
    _family(
        "openai-key",
        r"sk-(?:proj-|svcacct-|admin-)?(?P<b>[A-Za-z0-9_-]{20,}+)",
        "sk-",
        _mixed,
        _generated_run,
    ),
    _family(
        "aws-key",
        r"(?:AKIA|ASIA|ABIA|ACCA)(?P<b>[A-Z0-9]{16})" + _END,
        "akia asia abia acca",
        None,
        _not_hex,
    ),
    _family("github-token", r"gh[pousr]_(?P<b>[A-Za-z0-9]{30,}+)", "ghp_ gho_ ghu_ ghs_ ghr_"),
    _family("github-token", r"github_pat_(?P<b>[A-Za-z0-9_]{30,}+)", "github_"),
    _family(
        "gitlab-token",
        r"gl(?:pat|dt|rt|ptt)-(?P<b>[A-Za-z0-9_-]{20,}+)",
        "glpat- gldt- glrt- glptt-",
    ),
    _family(
        "slack-token",
        r"xox[abeprs]-(?P<b>[A-Za-z0-9-]{10,}+)",
        "xoxa- xoxb- xoxe- xoxp- xoxr- xoxs-",
    ),
    _family("slack-token", r"xapp-[0-9]-(?P<b>[A-Za-z0-9-]{10,}+)", "xapp-"),
    _family(
        "slack-webhook",
        r"https://hooks\.slack\.com/services/(?P<b>[A-Za-z0-9/_-]{10,}+)",
        "https://hooks.slack.com",
        None,
        None,
    ),
    _family("google-key", r"AIza(?P<b>[0-9A-Za-z_-]{35})" + _E, "aiza"),
    _family("google-token", r"ya29\.(?P<b>[0-9A-Za-z_-]{20,}+)", "ya29."),
    _family("stripe-key", r"(?:sk|rk)_(?:live|test)_(?P<b>[0-9A-Za-z]{16,}+)", "sk_ rk_"),
    _family("stripe-key", r"whsec_(?P<b>[0-9A-Za-z]{20,}+)", "whsec_"),
    _family("npm-token", r"npm_(?P<b>[A-Za-z0-9]{36})" + _END, "npm_"),
    _family("pypi-token", r"pypi-AgE(?P<b>[A-Za-z0-9_-]{50,}+)", "pypi-"),
    _family("huggingface-token", r"hf_(?P<b>[A-Za-z0-9]{34})" + _END, "hf_", _has_upper),
    # A JWT's first part is a run of token characters: what is glued before its ``eyJ``
    # (the group ``g``) is kept. Tried from the run's start, at its first ``eyJ`` only
    # (atomic): that part ends where the run does, wherever it starts.
    _family(
        "jwt",
        r"(?<![A-Za-z0-9_-])(?P<g>(?>[A-Za-z0-9_-]*?(?=eyJ)))"
        r"eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+",
        "eyj",
        None,
        None,
    ),
)
_JWT = len(TOKEN_FAMILIES) - 1
Span: TypeAlias = tuple[int, int, int]  # start, end, family


def token_span(family: int, m: re.Match[str]) -> Span | None:
    """Where the token ``m`` of ``family`` is to be redacted, if its checks pass."""
    _, _, check, glued, _ = TOKEN_FAMILIES[family]
    if check is not None and not check(m[0]):
        return None
    start = m.end("g") if family == _JWT else m.start()
    text = m.string
    is_glued = start > 0 and (
        text[start - 1] in TOKEN_CHARS
        or (text[start - 1] == "]" and _AFTER_MARK.search(text, max(0, start - 48), start))
    )
    if glued is not None and is_glued and not glued(m["b"]):
        return None
    return start, m.end(), family


def redact_spans(text: str, spans: list[Span]) -> str:
    """``text`` with the tokens at ``spans`` redacted; overlapping ones as one."""
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    done = 0
    start, end, family = spans[0]
    for s, e, f in [*spans[1:], (len(text) + 1, 0, 0)]:
        if s < end:
            end = max(end, e)
            continue
        out += [text[done:start], MARK.format(TOKEN_FAMILIES[family].kind)]
        done, (start, end, family) = end, (s, e, f)
    return "".join([*out, text[done:]])


# A match's last characters may begin the next token of its family, glued after its
# body (``ghp_…abcghp_…``: the body takes ``ghp``): a family's search goes on from
# that far back. No prefix has more characters before one its body lacks.
_OVERLAP = 8


def redact_tokens(text: str) -> str:
    """Every family searched over the whole text: what ``tokens`` does, plainly."""
    spans: list[Span] = []
    for i, family in enumerate(TOKEN_FAMILIES):
        at = 0
        while m := family.pattern.search(text, at):
            at = m.end() if i == _JWT else max(m.start() + 1, m.end() - _OVERLAP)
            if (span := token_span(i, m)) is not None:
                spans.append(span)
    return redact_spans(text, spans)


# -- the driver: where a prefix is, found by scans with a literal start (fast) --------
#
# ``low`` is the text one byte per character, ASCII lower-cased (``core.redact``).
# Most prefixes end with ``_`` or ``-``: found at that separator, by what precedes
# it; AWS and Google keys at their capital ``A``; the rest by ``bytes.find``.
_UNDERSCORE = re.compile(  # the group that matched: the prefix's head
    rb"_(?<=[kfpousrmcb]_)"
    rb"(?:(?<=(sk|rk|hf)_)|(?<=(gh[pousr]|npm)_)|(?<=(whsec)_)|(?<=(github)_))"
)
_DASH = re.compile(
    rb"-(?<=[kabeprsti]-)"
    rb"(?:(?<=(sk)-)|(?<=(xox[abeprs]|xapp|gldt|glrt|pypi)-)|(?<=(glpat|glptt)-))"
)
_CAPITAL_A = re.compile(r"A(?=KIA|SIA|BIA|CCA|Iza)")
_BY_HEAD: dict[bytes, list[int]] = {}
for _i, _f in enumerate(TOKEN_FAMILIES):
    for _head in _f.heads:
        _BY_HEAD.setdefault(_head, []).append(_i)
_FOUND = (b"ya29.", b"https://hooks.slack.com", b"eyj")  # found by ``find``
_RUN = re.compile(r"[A-Za-z0-9_-]*+")


def _heads(text: str, low: bytes) -> Iterator[tuple[int, list[int]]]:
    """Where a prefix is (a superset), and whose. Each family's prefixes are found by
    one scan, so in order: its search goes on from where it stopped."""
    for scan in (_UNDERSCORE, _DASH):
        for m in scan.finditer(low):
            head = m[m.lastindex or 0]
            yield m.start() - len(head), _BY_HEAD[head + m[0]]
    for a in _CAPITAL_A.finditer(text):
        if (families := _BY_HEAD.get(low[a.start() : a.start() + 4])) is not None:
            yield a.start(), families
    for head in _FOUND:
        at = low.find(head)
        while at >= 0:
            yield at, _BY_HEAD[head]
            at = low.find(head, at + 1)


def tokens(text: str, low: bytes) -> str:
    """``redact_tokens(text)``, each family tried only where its prefix is."""
    spans: list[Span] = []
    searched = [0] * len(TOKEN_FAMILIES)  # each family's search has gone this far
    for start, families in _heads(text, low):
        for family in families:
            if start < searched[family]:
                continue
            at, pattern = start, TOKEN_FAMILIES[family].pattern
            if family == _JWT:  # from the start of its run, if that was not searched
                before = text[searched[family] : at]
                at -= len(before) - len(before.rstrip(_TOKEN_CHARS))
                run_end = _RUN.match(text, at).end()  # type: ignore[union-attr]
                m = pattern.match(text, at)
                searched[family] = m.end() if m else run_end
            elif m := pattern.match(text, at):
                searched[family] = max(m.start() + 1, m.end() - _OVERLAP)
            if m and (span := token_span(family, m)) is not None:
                spans.append(span)
    return redact_spans(text, spans)
