"""Tokens glued after other text (``x_ghp_…``, ``prefix-sk-ant-…``, ``abcAKIA…``) are
redacted wherever they sit; identifiers, paths, hashes and base64 that merely hold a
prefix are not."""

from __future__ import annotations

import base64
import json

import pytest

from agentdeck.core.redact import redact, scrub
from agentdeck.core.redact_tokens import TOKEN_FAMILIES
from tests.core.test_redact import reference_redact

# One realistic token of every family (and of each prefix of a family), by kind.
TOKENS: list[tuple[str, str]] = [
    ("anthropic-key", "sk-ant-api03-Xq7LmZpR2vTnW9kYhJ3sUe_k2-Lq8WcVb4NmZ0aAA"),
    ("openai-key", "sk-proj-Tz4QwLp9NvRk2YhXm7JcSd3G-b8Kf_2Xw"),
    ("openai-key", "sk-Tz4QwLp9NvRk2YhXm7JcT3BlbkFJSd3Gb8Kf2XwQ1rLm"),
    ("aws-key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws-key", "ASIAY34FZKBOKMUTVV7A"),
    ("github-token", "ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd"),
    ("github-token", "gho_16C7e42F292c6912E7710c838347Ae178B4aXz"),
    ("github-token", "github_pat_11ABCDEFG0hJkLmNoPqRsT_uVwXyZabcdefghijklmnopQRSTUV12345"),
    ("gitlab-token", "glpat-zK9xWqLmR2pT7vNhYs4J"),
    ("slack-token", "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack-token", "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef"),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("google-key", "AIzaSyB3kLmZpQ9rTnW2vXhJ8sUeGc4dYfK0aRt"),
    ("google-token", "ya29.A0ArK9xWqLmR2pT7vNhYs4J-b8Kf_2Xw"),
    ("stripe-key", "sk_live_51HqXzK9xWqLmR2pT7vNhYs4J"),
    ("stripe-key", "rk_test_51HqXzK9xWqLmR2pT7vNhYs4J"),
    ("stripe-key", "whsec_zK9xWqLmR2pT7vNhYs4JbQw8Pz"),
    ("npm-token", "npm_zK9xWqLmR2pT7vNhYs4JbQw8PzLrTn3kHmYv"),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmcCJDRmZDMyMTljLWRmMGUtNDdkZC1iNzkzLTE2ODg0MTU3ZDlh"),
    ("huggingface-token", "hf_zK9xWqLmR2pT7vNhYs4JbQw8PzLrTn3kHm"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl"),
]
# Where a token may sit: glued after every kind of character, and as text shows it.
CONTEXTS = {
    "after _": "x_{}",
    "after -": "prefix-{}",
    "after .": "config.{}",
    "after /": "keys/{}",
    "after =": "key={}",
    "after :": "id:{}",
    "after a letter": "abc{}",
    "after a digit": "123{}",
    "after a word and _": "deploy_with_{} done",
    "in a URL path": "https://api.example.com/v1/x_{}/items?page=2",
    "in a URL query": "https://api.example.com/v1?a=1&key=k_{}&b=2",
    "in a JSON string": '{{"value": "{}", "n": 1}}',
    "glued in a JSON string": '{{"value": "x_{}", "n": 1}}',
    "at a line start": "{}\nnext line",
    "at a line end": "previous line\nabc_{}",
    "glued at both ends": "x_{}_y",
}
# Where the family's last characters could go on as a longer word: a Google key
# (its body may hold ``_`` and ``-``) glued at its end is no key of 39 characters.
NOT_GLUED_AT_THE_END = {"google-key"}
# Whose body takes ``/``, so what follows in a URL path is redacted with it.
TAKES_A_PATH = {"slack-webhook"}


def test_every_family_has_a_token_here() -> None:
    assert {kind for kind, _ in TOKENS} == {f.kind for f in TOKEN_FAMILIES}


@pytest.mark.parametrize("context", CONTEXTS.values(), ids=CONTEXTS.keys())
@pytest.mark.parametrize(("kind", "token"), TOKENS, ids=[f"{k}-{t[:6]}" for k, t in TOKENS])
def test_a_token_is_redacted_wherever_it_is_glued(kind: str, token: str, context: str) -> None:
    text = context.format(token)
    out = redact(text)
    if kind in NOT_GLUED_AT_THE_END and context == CONTEXTS["glued at both ends"]:
        # Known limit: a fixed-length key glued at its end is a longer word, kept
        # (the reference agrees); the day it is found, this says so.
        assert out == text == reference_redact(text)
        return
    assert token not in out
    if kind in TAKES_A_PATH and "/items" in context:
        assert out == "https://api.example.com/v1/x_[REDACTED:slack-webhook]?page=2"
    elif context == CONTEXTS["glued at both ends"]:  # ``_y`` may be the body's too
        assert out in (f"x_[REDACTED:{kind}]_y", f"x_[REDACTED:{kind}]")
    else:
        assert out == context.format(f"[REDACTED:{kind}]")  # the text around it is kept
    assert redact(out) == out
    assert out == reference_redact(text)


@pytest.mark.parametrize("quoting", ["json", "plain"])
def test_glued_tokens_one_a_line_are_all_redacted(quoting: str) -> None:
    lines = "\n".join(f"v_{token}" for _, token in TOKENS)
    text = json.dumps({"output": lines}) if quoting == "json" else lines
    out = scrub(text)
    assert [token for _, token in TOKENS if token in out] == []


FIXTURE = base64.b64encode(b"a fixture of no secret at all, only words and numbers 1234" * 4)
MUST_STAY = [
    "my_ghp_helper = 1",
    "my_ghp_helperfunctionforthegithubclientlibrary()",  # 30+ lower-case letters
    "x_ghp_3f786850e387550fdab836ed7e6dc881de23001b",  # a git SHA after a prefix
    "commit_3f786850e387550fdab836ed7e6dc881de23001b",
    "SHA1:0A1BACCA0123456789ABCDEF",  # an upper-case hex hash after ACCA
    "hash_ASIA0123456789ABCDEF",  # all hex: no key
    "flask-SQLAlchemy-3-1-1-py3-none-any.whl",
    "disk-image-Ubuntu-22-04-LTS-amd64.iso",
    "task-Q1-2024-REPORT-FINAL-v2.pdf",
    "mask-ant-colony-optimisation-module-for-routing",
    "risk_test_cases_for_the_payment_flow_and_refunds",
    "network_test_connectiontimeoutretriesexhausted",
    "npm_install_dependencies_for_the_workspace_packages",
    "the-xoxb-format-is-documented-in-the-slack-api-guide",
    "proxy-xapp-1-reference-guide-for-socket-mode",
    "cache_hf_modelsdownloadedfromthehubforlatertesting",
    "webhook_whsec_rotationschedulefortheproductionendpoint",
    "/usr/lib/python3/dist-packages/sk-learn_helpers/task-runner-utils/__init__.py",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "ABCDEF01-ACCA-4321-BEEF-0123456789AB",
    f"fixture = {FIXTURE.decode()}",
    "certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "the_eyJ_prefix_marks_base64_json_without_dots",
]


@pytest.mark.parametrize("text", MUST_STAY)
def test_identifiers_paths_hashes_and_base64_holding_a_prefix_stay(text: str) -> None:
    assert redact(text) == text
    assert reference_redact(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("a" * 500_000 + "x_ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd", "a" * 500_000 + "x_"),
        ("sk-" * 100_000 + "x_ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd", None),
        ("eyJ" * 100_000 + ".x_eyJabcdefghij.eyJabcdefghij.sig", None),
    ],
    ids=["after a long run", "after many rejected prefixes", "after many failed JWT heads"],
)
def test_a_glued_token_after_decoys_is_still_found(text: str, kept: str | None) -> None:
    out = redact(text)
    assert "G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd" not in out and "[REDACTED:" in out
    assert "eyJabcdefghij.eyJ" not in out
    if kept is not None:
        assert out == kept + "[REDACTED:github-token]"


@pytest.mark.parametrize(("first_kind", "first"), TOKENS, ids=[k for k, _ in TOKENS])
def test_two_tokens_glued_together_are_both_redacted(first_kind: str, first: str) -> None:
    # A key of a fixed length ends where another token starts (``…EXAMPLEsk-ant-…``).
    for kind, token in TOKENS:
        text = f"x_{first}{token}" + (" y" if kind in NOT_GLUED_AT_THE_END else "_y")
        out = redact(text)
        assert first not in out and token not in out, (first, token, out)
        assert redact(out) == out and out == reference_redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "network_test_connectiontimeoutretriesexhaustedrk_test_51HqXzK9xWqLmR2pT7vNhYs4J",
        "helper_ghp_lowercasewordsmakeupthisidentifiernameghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7",
        "ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqdghp_R7kLmZpQ9rTnW2vXhJ8sUeGc4dYfK0aRtB3x",
    ],
    ids=["after a rejected one", "after a rejected one, same family", "after an accepted one"],
)
def test_a_token_that_begins_in_the_body_of_the_one_before_is_found(text: str) -> None:
    out = redact(text)
    assert out.endswith("[REDACTED:stripe-key]") or out.endswith("[REDACTED:github-token]")
    assert redact(out) == out and out == reference_redact(text)
