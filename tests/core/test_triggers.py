"""``core.triggers``: GitHub's signature, checked in constant time; the prompt
rendered in the sandbox with the payload as data only; names, rates, ids."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from agentdeck.core.triggers import (
    MAX_PROMPT_CHARS,
    check_delivery_id,
    check_name,
    parse_rate,
    sign,
    signature_ok,
)
from agentdeck.errors import UsageError
from agentdeck.orchestration.trigger_prompts import check_prompt_template, render_prompt

SECRET = b"0123456789abcdef-secret"


def test_the_signature_is_githubs_hmac_sha256() -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    want = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert sign(SECRET, body) == want
    assert signature_ok(SECRET, body, want)
    assert signature_ok(SECRET, body, want.upper().replace("SHA256=", "sha256="))
    for bad in (None, "", want[:-1], want + "0", "sha1=" + want[7:], want[7:], " ", "sha256="):
        assert not signature_ok(SECRET, body, bad), bad
    assert not signature_ok(SECRET, body + b" ", want)
    assert not signature_ok(b"another-secret-0123", body, want)


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ payload.__class__.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ lipsum.__globals__ }}",
        "{{ range(10) }}",
        "{{ payload.update({'a': 1}) }}",
        "{{ payload.pop('a') }}",
        "{{ 'x' * 100000000 }}",
        "{{ [1] * 100000000 }}",
        "{{ 9 ** 99999999 }}",
        "{{ payload.missing }}",
        "{% for i in payload.a %}{% endfor %}",
        "{{ self.__init__ }}",
        "{{ config }}",
    ],
)
def test_the_sandbox_refuses_reaching_for_python(template: str) -> None:
    payload = {"a": "x"}
    with pytest.raises(UsageError):
        render_prompt(template, payload, event="push", delivery="d")
    assert payload == {"a": "x"}


def test_the_payload_is_data_and_the_prompt_is_capped() -> None:
    payload = {"title": "{{ 7 * 7 }}{% raw %}", "n": 3, "xs": ["a", "b"]}
    got = render_prompt(
        "T={{ payload.title }} n={{ payload.n * 2 }} {{ payload.xs | join(',') }} {{ event }}",
        payload,
        event="issues",
        delivery="d-1",
    )
    assert got == "T={{ 7 * 7 }}{% raw %} n=6 a,b issues"
    long = render_prompt("{{ payload.t }}", {"t": "y" * 50_000}, event="e", delivery="d")
    assert len(long) == MAX_PROMPT_CHARS
    with pytest.raises(UsageError, match="rendered nothing"):
        render_prompt("{{ payload.t }}", {"t": "  "}, event="e", delivery="d")


def test_names_rates_ids_and_templates_are_checked() -> None:
    assert check_name("gh-pr_1") == "gh-pr_1"
    for bad in ("", "-x", "A", "a/b", "../x", "x" * 64, "a b", "é"):
        with pytest.raises(UsageError):
            check_name(bad)
    assert parse_rate("10/min") == 10 and parse_rate(" 3 / min ") == 3 and parse_rate("7") == 7
    for bad in ("0/min", "601/min", "10/h", "lots", "-1/min"):
        with pytest.raises(UsageError):
            parse_rate(bad)
    assert check_delivery_id("72d3162e-cc78-11e3-81ab-4c9367dc0958")
    for bad_id in (None, "", " x", "a\nb", "x" * 201, "\x1b[31m"):
        with pytest.raises(UsageError):
            check_delivery_id(bad_id)
    for bad_template in ("", "   ", "{{ x", "{% if %}", "x" * 4001):
        with pytest.raises(UsageError):
            check_prompt_template(bad_template)
