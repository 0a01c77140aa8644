"""Redaction: the fixed corpus, the value rule, ``<private>``, values, and properties."""

from __future__ import annotations

import json
import re
import shlex
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from agentdeck.core import redact_rules as RR
from agentdeck.core.private import strip_private
from agentdeck.core.redact import is_secret_name, redact, redact_escaped, scrub, scrub_value
from agentdeck.core.redact_tokens import redact_tokens

CORPUS = json.loads((Path(__file__).parent / "data" / "secrets_corpus.json").read_text())
POSITIVE: list[dict[str, Any]] = CORPUS["positive"]
NEGATIVE: list[str] = CORPUS["negative"]
MB = 1_000_000


def test_the_corpus_is_big_enough_to_mean_something() -> None:
    assert len(POSITIVE) >= 60 and len(NEGATIVE) >= 30
    assert len({case["kind"] for case in POSITIVE}) >= 15


@pytest.mark.parametrize("case", POSITIVE, ids=[f"{i}-{c['kind']}" for i, c in enumerate(POSITIVE)])
def test_every_secret_of_the_corpus_is_redacted(case: dict[str, Any]) -> None:
    out = scrub(case["text"])
    for secret in case["secrets"]:
        assert secret not in out
    assert f"[REDACTED:{case['kind']}]" in out
    assert scrub(out) == out


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_prose_and_code_come_out_unchanged(text: str) -> None:
    assert scrub(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2 ./run", "DB_PASSWORD=[REDACTED:assignment] ./run"),
        ('export API_KEY="abc123"', 'export API_KEY="[REDACTED:assignment]"'),
        ("password: hunter2\nuser: bob", "password: [REDACTED:assignment]\nuser: bob"),
        ('{"password": "pw1", "n": 1}', '{"password": "[REDACTED:assignment]", "n": 1}'),
        ("f(password=s3cr3t!)", "f(password=[REDACTED:assignment])"),
        ("https://bob:pw9@h/x", "https://bob:[REDACTED:password]@h/x"),
        ("Authorization: Bearer abcdef123456", "Authorization: Bearer [REDACTED:bearer]"),
        ("a\n-----BEGIN EC PRIVATE KEY-----\nAAAA\n", "a\n[REDACTED:private-key]"),
        (
            "x -----BEGIN PRIVATE KEY-----\nA\n-----END PRIVATE KEY----- y",
            "x [REDACTED:private-key] y",
        ),
        ("key AKIAABCDEFGHIJKLMNOP, region", "key [REDACTED:aws-key], region"),
    ],
)
def test_redaction_keeps_the_text_around_the_secret(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("password = form.password", "a dotted name is code"),
        ("password = getpass()", "a call is code"),
        ("token = os.environ['T']", "a subscript is code"),
        ("login(password=password)", "the identifier repeats the name"),
        ("login(password=pw, user=u)", "a keyword argument passes a variable"),
        ("password: the one from the mail", "more words on the line: prose"),
        ("api_key: str", "a type name"),
        ("token: None", "a keyword"),
        ("PASSWORD=$DB_PASSWORD", "a reference"),
        ('password = ""', "empty"),
        ("password = '***'", "a placeholder"),
        ("credentials: {", "a structure opens: its parts are judged on their own"),
    ],
)
def test_values_that_are_code_or_no_value_stay(text: str, why: str) -> None:
    assert redact(text) == text, why


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql -uroot -ppw1 db", "mysql -uroot -p[REDACTED:password] db"),
        ("mysql -p db", None),  # -p alone prompts: db is the database
        ("mysql --password=pw1", "mysql --password=[REDACTED:assignment]"),
        ("docker login -p pw1 r", "docker login -p [REDACTED:password] r"),
        ("docker login --password=pw1 r", "docker login --password=[REDACTED:password] r"),
        ("docker run -p 80:80 x", None),  # a port
        ("docker login r && docker run -p 80:80 x", None),  # a second command
        ("docker login --password-stdin r", None),
        ("helm registry login r -p 'p w'", "helm registry login r -p '[REDACTED:password]'"),
        ("sshpass -p pw1 ssh -p 22 h", "sshpass -p [REDACTED:password] ssh -p 22 h"),
        ("redis-cli -p 6379 -a pw1", "redis-cli -p 6379 -a [REDACTED:password]"),
        ("mongosh -u u -p pw1", "mongosh -u u -p [REDACTED:password]"),
        ("sshpass -p $PW ssh h", None),  # a reference
        ("psql -p 5432", None),
    ],
)
def test_a_password_flag_is_redacted_only_where_its_command_takes_one(
    text: str, expected: str | None
) -> None:
    assert redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'curl -H "X-Api-Key: k1" https://h/x',
            'curl -H "X-Api-Key: [REDACTED:assignment]" https://h/x',
        ),
        ("wget --header='Api-Key: k1' h", "wget --header='Api-Key: [REDACTED:assignment]' h"),
        ("http h/x X-Auth-Token:k1 a=1", "http h/x X-Auth-Token:[REDACTED:assignment] a=1"),
        ('curl -H "X-Request-Id: abc" https://h', None),  # not a secret name
        ("X-Api-Key: is the header to send", None),  # no command: prose
    ],
)
def test_a_header_argument_on_a_command_line_is_no_prose(text: str, expected: str | None) -> None:
    assert redact(text) == (text if expected is None else expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("machine h login u password pw1", "machine h login u password [REDACTED:password]"),
        ("machine h\npassword pw1", "machine h\npassword [REDACTED:password]"),
        ("the machine uses password auth", None),  # prose: not at a line start, no login
        ("h:5432:db:u:pw1", "h:5432:db:u:[REDACTED:password]"),
        ("h:*:db:u:p\\:w", "h:*:db:u:[REDACTED:password]"),  # an escaped colon
        ("fe80:1:2:3:abcd", None),  # an IPv6 address
        ("h:5432:db:u:pw1 and more", None),  # not a line of its own
    ],
)
def test_netrc_and_pgpass_lines(text: str, expected: str | None) -> None:
    assert redact(text) == (text if expected is None else expected)


def test_a_bare_identifier_in_a_config_is_a_literal_and_is_redacted() -> None:
    # .env / YAML / ini values look like identifiers; the rule leans to redacting them
    assert redact("SMTP_PASSWORD=hunter2") == "SMTP_PASSWORD=[REDACTED:assignment]"
    assert redact("password = hunter2") == "password = [REDACTED:assignment]"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("DB_PASSWORD", True), ("apiKey", True), ("x-api-key", True), ("client_secret", True),
        ("GITHUB_TOKEN", True), ("aws_secret_access_key", True), ("Pwd", True),
        ("_authToken", True),
        ("OAuth2Token", True), ("PASSWORD2", True), ("spring.datasource.password", True),
        ("AccountKey", True), ("token_count", False), ("TOKENIZER", False),
        ("password_field", False), ("max_tokens", False), ("secret_name", False), ("PWD", False),
        ("primary_key", False), ("key", False), ("bypass", False), ("", False), ("___", False),
        ("PGPASSWORD", True), ("MYSQL_PWD", True), ("apitoken", True), ("SECRET_KEY_BASE", True),
        ("API_TOKEN_V2", True), ("DB_PASSWORD_OLD", True), ("client-key-data", True),
        ("client-certificate-data", False), ("PGPASSFILE", False), ("TOKEN_TTL_SECONDS", False),
        ("POSTGRES_PASSWORD_FILE", False), ("V2", False), ("BASE_V2", False),
    ],
)  # fmt: skip
def test_the_last_word_of_a_name_says_whether_it_is_secret(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>b</private> c", "a  c"),
        ("a <PRIVATE>b</Private> c", "a  c"),
        ("a<private>\nline 1\nline 2\n</private>\nb", "a\nb"),
        ("1<private>x</private>2<private>y</private>3", "123"),
        ("keep <private>secret to the end", "keep "),
        ("stray </private> tag", "stray  tag"),
        ("a<private>b<private>c</private>d</private>e", "ae"),
        ("<priv<private>x</private>ate>gone", ""),
        ("</priv</private>ate>kept", "kept"),
        ("<priv<private>a</private>ate>b</private>c", "c"),
        ("<pr</private>i</private>v</private>ate>gone", ""),
        ("a <private  >b</private\n> c", "a  c"),
        ("no tags <b>here</b>", "no tags <b>here</b>"),
    ],
)
def test_private_blocks_are_dropped_with_their_tags(text: str, expected: str) -> None:
    assert strip_private(text) == expected


def test_scrub_drops_private_parts_and_redacts_the_rest() -> None:
    text = "run <private>my diary</private> with TOKEN=abc123def"
    assert scrub(text) == "run  with TOKEN=[REDACTED:assignment]"


def test_scrub_value_walks_dicts_lists_and_tuples() -> None:
    value = {
        "command": "curl -u bob:pw12345 https://x",
        "api_key": "plain",
        "password": {"nested": "whole value goes"},
        "token": 123456,
        "secret": None,
        "auth": False,
        "passwd": "",
        "args": ["--token=abc123xyz", ("DB_PASSWORD=x1",)],
        "count": 3,
        7: "not a name",
    }
    original = json.dumps(value, default=str)
    out = scrub_value(value)
    assert out == {
        "command": "curl -u bob:[REDACTED:password] https://x",
        "api_key": "[REDACTED:assignment]",
        "password": "[REDACTED:assignment]",
        "token": "[REDACTED:assignment]",
        "secret": None,
        "auth": False,
        "passwd": "",
        "args": ["--token=[REDACTED:assignment]", ("DB_PASSWORD=[REDACTED:assignment]",)],
        "count": 3,
        7: "not a name",
    }
    assert json.dumps(value, default=str) == original  # the input is not changed
    assert scrub_value(out) == out


BEARER = len("Authorization: [REDACTED:bearer] ")
ADVERSARIAL = {  # name: (text, markers in the scrubbed text, its length; None: unchanged)
    "letters": ("a" * MB, 0, None),
    "one huge key": ("sk-ant-" + "a" * MB, 1, len("[REDACTED:anthropic-key]")),
    "prose names": ("password: x " * (MB // 12), 1, MB - 4 + len("[REDACTED:assignment] ") - 2),
    "chained assignments": ("a=" * (MB // 2), 0, None),
    "key prefixes": ("sk-" * (MB // 3), 0, None),
    "key headers": (
        "-----BEGIN RSA PRIVATE KEY-----" * (MB // 31),
        1,
        len("[REDACTED:private-key]"),
    ),
    "private tags": ("<private>" * (MB // 9), 0, 0),
    "escaped quotes on one line": ('\\"' * (MB // 2), 0, None),
    "stray closing tags": ("</private>a" * (MB // 11), 0, MB // 11),
    "halves of stray tags": ("</priv" * (MB // 20) + "</private>" + "ate>" * (MB // 20), 0, 0),
    "halves of opening tags": (
        "<priv" * (MB // 18) + "<private>x</private>" + "ate>" * (MB // 18),
        0,
        len("<priv") * (MB // 18 - 1),
    ),
    "closing tags and brackets": ("</private>a>" * (MB // 12), 0, 2 * (MB // 12)),
    "url starts": ("a://u:" * (MB // 6), 0, None),
    "headers": ("Authorization: " * (MB // 15), MB // 30, BEARER * (MB // 30)),
    "escaped quotes": ('password="' + '\\"' * (MB // 2), 1, len('password="[REDACTED:assignment]')),
    "escaped quotes, closed": ('password="' + '\\"' * (MB // 2) + '"', 1, 32),
    "closers": ("password=a1!" + ")" * MB, 1, len("password=[REDACTED:assignment]") + MB),
    "curl": ("curl -u " * (MB // 8), 0, None),
    "mysql passwords": ("mysql -pa " * (MB // 10), MB // 10, 28 * (MB // 10)),
    "password flags": ("-p " * (MB // 3), 0, None),
    "header arguments": ('-H "X-Api-Key: v" ' * (MB // 18), MB // 18, 38 * (MB // 18)),
    "netrc entries": ("machine h login u password p\n" * (MB // 29), MB // 29, 47 * (MB // 29)),
    "netrc words": ("machine h password\n" * (MB // 19), 0, None),
    "pgpass fields": ("a:1:" * (MB // 4), 0, None),
    "pgpass lines": ("h:1:b:c:d\n" * (MB // 10), MB // 10, 28 * (MB // 10)),
    "quotes": ('"' * MB, 0, None),
    "dashes": ("a-" * (MB // 2), 0, None),
    "spaces": (" " * MB, 0, None),
    # token prefixes glued after token characters: each family searched once over them
    "glued key prefixes": ("x_sk-" * (MB // 5), 0, None),
    "glued token prefixes": ("a_ghp_" * (MB // 6), 0, None),
    "glued pat prefixes": ("q_github_pat_" * (MB // 13), 0, None),
    "capital A heads": ("AKIA" * (MB // 4), 1, 26),  # a key ends where the next starts
    "google heads": ("AIza" * (MB // 4), 0, None),
    "jwt heads": ("eyJ" * (MB // 3), 0, None),
    "glued jwt heads": ("a_eyJ." * (MB // 6), 0, None),
}


@pytest.mark.parametrize(("text", "markers", "size"), ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_megabyte_of_adversarial_text_is_scrubbed_in_linear_time(
    text: str, markers: int, size: int | None
) -> None:
    # Nothing is timed here: a backtracking storm would hit the pytest timeout.
    out = scrub(text)
    assert out.count("[REDACTED:") == markers
    if size is None:
        assert out == text
    else:
        assert len(out) == size


# -- properties ---------------------------------------------------------------------------------

B64URL = string.ascii_letters + string.digits + "-_"
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def chars(alphabet: str, n: int, m: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=n, max_size=n if m is None else m)


PASSWORD = chars(ALNUM + "!@%^*+/", 6, 30).map(lambda s: f"p{s}9!")
URL_PASSWORD = chars(ALNUM + "!%*+/", 6, 30).map(lambda s: f"p{s}9!")  # "@" is encoded
INLINE, LINE = " ", "\n"  # tokens sit in prose; headers and config values on their own line
FAMILY_PLANTS: list[tuple[st.SearchStrategy[str], str, str]] = [
    (chars(B64URL, 20, 100).map(lambda s: "sk-ant-api03-" + s), "{}", INLINE),
    (chars(B64URL, 20, 80).map(lambda s: "sk-proj-" + s + "Q7"), "{}", INLINE),
    (chars(UPPER, 16).map(lambda s: "AKIA" + s), "{}", INLINE),
    (chars(ALNUM, 36).map(lambda s: "ghp_" + s), "{}", INLINE),
    (chars(ALNUM + "_", 40, 82).map(lambda s: "github_pat_" + s), "{}", INLINE),
    (chars(B64URL, 20, 30).map(lambda s: "glpat-" + s), "{}", INLINE),
    (chars(ALNUM + "-", 10, 50).map(lambda s: "xoxb-" + s), "{}", INLINE),
    (chars(B64URL, 35).map(lambda s: "AIza" + s), "{}", INLINE),
    (chars(ALNUM, 16, 40).map(lambda s: "sk_live_" + s), "{}", INLINE),
    # glued after token characters: a body that looks generated (a capital, not hex)
    (chars(ALNUM, 12, 40).map(lambda s: "sk-ant-api03-" + s + "Q7"), "x_{}", INLINE),
    (chars(ALNUM, 34).map(lambda s: "ghp_" + s + "Q7"), "prefix-{}", INLINE),
    (chars(UPPER, 15).map(lambda s: "AKIA" + s + "Z"), "abc{}", INLINE),
    (chars(ALNUM, 32).map(lambda s: "hf_" + s + "Q7"), "{{'v': 'x_{}'}}", INLINE),
    (
        st.tuples(chars(B64URL, 8, 40), chars(B64URL, 8, 40), chars(B64URL, 0, 40)).map(
            lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"
        ),
        "{}",
        INLINE,
    ),
    (
        st.tuples(chars(B64URL, 8, 40), chars(B64URL, 8, 40), chars(B64URL, 0, 40)).map(
            lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"
        ),
        "x_{}",
        INLINE,
    ),
    (URL_PASSWORD, "postgres://app:{}@db:5432/app", INLINE),
    (PASSWORD, "curl -u admin:{} https://x", INLINE),
    (chars(B64URL, 11, 40).map(lambda s: s + "1"), "Bearer {}", INLINE),
    (
        chars(B64URL + "+/", 64),
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        LINE,
    ),
    (chars(B64URL + "+/", 64), "-----BEGIN OPENSSH PRIVATE KEY-----\n{}", LINE),
    (chars(B64URL, 12, 40), "Authorization: Bearer {}", LINE),
    (chars(B64URL, 12, 40), "Authorization: Basic {}=", LINE),
    (PASSWORD, "DB_PASSWORD={}", LINE),
    (PASSWORD, 'export SECRET_KEY="{}"', LINE),
    (PASSWORD, "password: {}", LINE),
    (PASSWORD, '{{"api_key": "{}"}}', LINE),
    (PASSWORD, "PGPASSWORD={} psql -h db", LINE),
    (PASSWORD, 'curl -H "X-Api-Key: {}" https://h/x', LINE),
    (PASSWORD, "machine h login u password {}", LINE),
    (PASSWORD, "h:5432:db:u:{}", LINE),
    (PASSWORD, "mysql -u root -p{} app", LINE),
    (PASSWORD, "docker login -u ci --password {} r", LINE),
]
FAMILIES = [
    secrets.map(lambda v, fmt=fmt, sep=sep: (v, sep + fmt.format(v) + sep))
    for secrets, fmt, sep in FAMILY_PLANTS
]
FRAGMENTS = [
    "password", "token", "api_key", "=", ":", ": ", " = ", " ", "\n", '"', "'", "`", "(", ")",
    ",", ";", "&", "#", "$", "${X}", "[REDACTED:x]", "abc123XYZ", "sk-ant-", "sk-", "AKIA",
    "ABCDEFGHIJKLMNOP", "ghp_", "a" * 36, "eyJ", "eyJabcdefghij", ".", "<private>", "x_",
    "Q7", "AIza", "xoxb-", "hf_", "github_pat_", "ya29.",
    "</private>", "<priv", "ate>", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----",
    "Authorization: ", "Bearer ", "Basic ", "://", "u:", "@", "curl -u ", "x", "\\", "-", "_",
    "-p", "-p ", "mysql ", "docker login ", "sshpass ", "machine h ", "login u ", " password ",
    '-H "', "X-Api-Key: ", "http ", ":5432:", "*:", "PGPASSWORD", "_V2", "-key-data",
]  # fmt: skip
composed = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join)
texts = st.one_of(
    st.text(), composed, st.lists(st.one_of(st.text(max_size=5), composed)).map("".join)
)


@given(texts)
@example("password=a)")
@example("<priv<private>x</private>ate>")
def test_scrub_is_idempotent(text: str) -> None:
    once = scrub(text)
    assert scrub(once) == once


@given(st.text())
def test_redact_takes_any_text(text: str) -> None:
    out = redact(text)
    assert isinstance(out, str)
    assert strip_private(text).count("<private>") == 0


@given(texts, texts)
def test_a_private_block_never_survives_whatever_surrounds_it(before: str, after: str) -> None:
    assume("S3CR" not in before + after)
    out = strip_private(before + "<private>S3CR</private>" + after)
    assert "S3CR" not in out
    assert not re.search(r"<(/?)private\s{0,32}>", out, re.IGNORECASE)


@given(st.one_of(*FAMILIES), texts, texts)
def test_a_planted_secret_never_survives(planted: tuple[str, str], before: str, after: str) -> None:
    secret, plant = planted
    assume(secret not in before and secret not in after)
    assume(secret not in scrub(before + plant.replace(secret, "") + after))
    assert secret not in scrub(before + plant + after)


READ_FORMATS = ["{n}\t{line}", "{n:>6}→{line}"]  # the Read tool's line numbers, two versions


def as_read(text: str, fmt: str) -> str:
    return "\n".join(fmt.format(n=i + 1, line=line) for i, line in enumerate(text.split("\n")))


@pytest.mark.parametrize("fmt", READ_FORMATS)
def test_every_case_is_found_as_the_read_tool_shows_a_file(fmt: str) -> None:
    for case in POSITIVE:
        out = scrub(as_read(case["text"], fmt))
        assert not [s for s in case["secrets"] if s in out], case["text"]
    for text in NEGATIVE:
        assert scrub(as_read(text, fmt)) == as_read(text, fmt), text


# The rules applied the plain way, each over the whole text, in order: what
# ``redact`` does faster by running each rule only where its anchor occurs.
def _reference_assignments(text: str) -> str:
    out: list[str] = []
    pos = 0
    while m := RR.NAME_SEP.search(text, pos):
        out.append(text[pos : m.end()])
        pos = m.end()
        value = RR.VALUE.match(text, pos) if RR.is_secret_name(m["name"]) else None
        if value is not None:
            out.append(RR.redact_value(m, value))
            pos = value.end()
    out.append(text[pos:])
    return "".join(out)


def reference_redact(text: str) -> str:
    text = RR.PRIVATE_KEY.sub(RR.MARK.format("private-key"), text)
    text = RR.NETRC.sub(RR.redact_netrc, text)  # the two that span lines come first
    return _reference_plain(redact_escaped(text, _reference_plain))


def _reference_plain(text: str) -> str:
    text = RR.PRIVATE_KEY.sub(RR.MARK.format("private-key"), text)
    text = RR.NETRC.sub(RR.redact_netrc, text)  # the two that span lines come first
    text = redact_tokens(text)
    text = RR.URL_CREDENTIALS.sub(RR.redact_url_credentials, text)
    text = RR.CURL_USER.sub(RR.redact_curl_user, text)
    text = RR.AUTH_HEADER.sub(RR.redact_auth_header, text)
    text = RR.COOKIE_HEADER.sub(RR.keep_group("cookie", 2), text)
    text = RR.BEARER.sub(RR.redact_bearer, text)
    text = RR.CLI_PASSWORD.sub(RR.redact_cli_password, text)
    text = RR.PGPASS.sub(RR.redact_pgpass, text)
    return _reference_assignments(text)


@given(st.lists(st.one_of(texts, st.one_of(*FAMILIES).map(lambda p: p[1])), max_size=6))
@example(["x\n", "A" * 40, " eyJabcdefghij.eyJabcdefghij. "])
def test_the_fast_driver_finds_what_the_plain_passes_find(parts: list[str]) -> None:
    text = "".join(parts)
    assert redact(text) == reference_redact(text)


def test_the_fast_driver_agrees_on_the_corpus() -> None:
    for case in POSITIVE:
        assert redact(case["text"]) == reference_redact(case["text"])
    for text in NEGATIVE:
        assert redact(text) == reference_redact(text)


TOKEN_SAMPLES = {  # one of each family, at its shortest, as prose around it would have it
    "anthropic-key": "sk-ant-" + "a1B2c" * 4,
    "openai-key": "sk-" + "Ab1" * 7,
    "aws-key": "AKIA" + "Q" * 15 + "7",
    "github-token": "ghp_" + "a1" * 15,
    "gitlab-token": "glpat-" + "x" * 20,
    "slack-token": "xoxb-" + "1" * 10,
    "slack-webhook": "https://hooks.slack.com/services/T0/B0/" + "x" * 10,
    "google-key": "AIza" + "b" * 35,
    "google-token": "ya29." + "c" * 20,
    "stripe-key": "sk_live_" + "d" * 16,
    "npm-token": "npm_" + "e" * 36,
    "pypi-token": "pypi-AgE" + "f" * 50,
    "huggingface-token": "hf_" + "G" * 34,
    "jwt": "eyJ" + "h" * 8 + ".eyJ" + "i" * 8 + ".",
}


@pytest.mark.parametrize("kind", sorted(TOKEN_SAMPLES))
@pytest.mark.parametrize("around", ["{}", "see {} here", "x.{}\n", '"{}"', "(k={})"])
def test_every_token_family_is_found_wherever_it_sits(kind: str, around: str) -> None:
    token = TOKEN_SAMPLES[kind]
    out = redact(around.format(token))
    assert token not in out and f"[REDACTED:{kind}" in out


# How a text reaches Bash as one argument: what an agent's command line (and so the
# event log) shows of it.
def double_quoted(text: str) -> str:
    return '"' + "".join("\\" + c if c in '"\\$`' else c for c in text) + '"'


def ansi_c_quoted(text: str) -> str:
    escapes = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}
    return "$'" + "".join(escapes.get(c, c) for c in text) + "'"


QUOTINGS: dict[str, Callable[[str], str]] = {
    "shlex": shlex.quote,
    "double": double_quoted,
    "ansi-c": ansi_c_quoted,
}


@pytest.mark.parametrize("quoting", sorted(QUOTINGS))
def test_every_secret_of_the_corpus_is_redacted_in_one_command_quoting_them_all(
    quoting: str,
) -> None:
    # An unterminated private key is redacted to the end of the text: those go last.
    cases = sorted(POSITIVE, key=lambda c: "BEGIN" in c["text"] and "END" not in c["text"])
    command = "printf '%s\\n' " + " ".join(QUOTINGS[quoting](c["text"]) for c in cases)
    out = scrub(command)
    assert [s for c in POSITIVE for s in c["secrets"] if s in out] == []


@pytest.mark.parametrize("quoting", sorted(QUOTINGS))
@pytest.mark.parametrize("case", POSITIVE, ids=[f"{i}-{c['kind']}" for i, c in enumerate(POSITIVE)])
def test_every_secret_of_the_corpus_is_redacted_inside_a_quoted_argument(
    case: dict[str, Any], quoting: str
) -> None:
    command = "printf %s " + QUOTINGS[quoting](case["text"])
    out = scrub(command)
    assert [s for s in case["secrets"] if s in out] == [], out
    assert "[REDACTED:" in out and scrub(out) == out


@pytest.mark.parametrize("quoting", sorted(QUOTINGS))
@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_prose_and_code_in_a_quoted_argument_come_out_unchanged(
    text: str, quoting: str
) -> None:
    command = "printf %s " + QUOTINGS[quoting](text)
    assert scrub(command) == command


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "printf %s 'client_secret: '\"'\"'2MIXFNEA2E^upM'\"'\"''",
            "printf %s 'client_secret: '\"'\"'[REDACTED:assignment]'\"'\"''",
        ),
        ("echo 'X-Api-Key: ZUH9shhezEVMd'", "echo 'X-Api-Key: [REDACTED:assignment]'"),
        (
            'echo "export DB_PASSWORD=\\"p\\\\w1\\""',
            'echo "export DB_PASSWORD=\\"[REDACTED:assignment]\\""',
        ),
        (
            "printf $'a\\npassword: hunter2\\nb'",
            "printf $'a\\npassword: [REDACTED:assignment]\\nb'",
        ),
        (
            "printf '%s\\n' 'auth_token: Pl+ozdwy8g@qR4' 'set -x'",
            "printf '%s\\n' 'auth_token: [REDACTED:assignment]' 'set -x'",
        ),
        (
            "printf $'user:\\n  token: eEVSWiBDsBYb' $'next'",
            "printf $'user:\\n  token: [REDACTED:assignment]' $'next'",
        ),
        (
            "echo 'a password b' 'machine h\n  login u\n  password iQtrZZEE%HT9'",
            "echo 'a password b' 'machine h\n  login u\n  password [REDACTED:password]'",
        ),
        # not secrets, quoted
        ("echo 'x='\"'\"'$TOKEN'\"'\"''", None),
        ("echo 'ask('\"'\"'Password: '\"'\"')'", None),
        ("sh -c 'mysql -p\"$PW\" db'", None),
        ('echo "token: \\"${API_TOKEN}\\""', None),
    ],
)
def test_a_quoted_argument_is_read_unescaped(text: str, expected: str | None) -> None:
    assert scrub(text) == (text if expected is None else expected)
