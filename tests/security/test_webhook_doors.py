"""Doors: ``POST /hooks/NAME`` is open to the internet without a token (the HMAC is
its credential), so every way in is tried against a real daemon and must start
nothing: no signature, a wrong one, one of another body or secret; a replayed
delivery id; a flood past the rate; a body past 1 MiB (declared, or streamed
without a length); prompt templates that reach for Python's internals, and
payloads that carry template syntax; a secret file others can read; a foreign
Host header. The refused signature is logged without the body."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.core.triggers import MAX_BODY_BYTES, sign
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

GITHUB = Path(__file__).parent.parent / "fixtures" / "github"
SECRET = b"door-test-secret-0123456789abcdef"
BODY = (GITHUB / "pull_request.json").read_bytes()


def add(tmp_path: Path, name: str, prompt: str, *, rate: str = "10/min") -> None:
    secret = tmp_path / f"{name}.secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    done = deck(
        deck_env(tmp_path),
        "trigger", "add", name,
        "--agent", "reviewer",
        "--prompt-template", prompt,
        "--secret-file", str(secret),
        "--rate", rate,
        "--project", str(project),
        "--scenario", "chat",
    )  # fmt: skip
    assert done.code == 0, done.err


@pytest.fixture
async def served(settings: Settings, tmp_path: Path) -> AsyncIterator[Served]:
    add(tmp_path, "pr", "Review {{ payload.pull_request.html_url }}")
    add(tmp_path, "slow", "Review {{ payload.number }}", rate="2/min")
    add(tmp_path, "mro", "{{ ''.__class__.__mro__[1].__subclasses__() }}")
    add(tmp_path, "globals", "{{ cycler.__init__.__globals__.os.system('touch /tmp/x') }}")
    add(tmp_path, "mutate", "{{ payload.update({'x': 1}) }} {{ payload.x }}")
    add(tmp_path, "big", "{{ 'A' * 100000000 }}")
    add(tmp_path, "echo", "Title: {{ payload.pull_request.title }}")
    async with serving(settings) as s:
        yield s


def headers(body: bytes, **extra: str) -> dict[str, str]:
    found = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(SECRET, body),
    }
    found.update(extra)
    return found


async def post(served: Served, name: str, body: bytes = BODY, **extra: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=served.info.url, timeout=60) as client:
        return await client.post(f"/hooks/{name}", content=body, headers=headers(body, **extra))


async def agents(served: Served) -> list[dict[str, Any]]:
    async with served.api() as api:
        r = await api.get("/api/agents")
        assert r.status_code == 200, r.text
        found: list[dict[str, Any]] = r.json()["agents"]
        return found


async def test_no_wrong_or_foreign_signature_starts_anything_and_the_log_keeps_no_body(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    other = BODY.replace(b"Cache the parsed config", b"Drop the auth check")
    tries = {
        "missing": {"X-Hub-Signature-256": ""},
        "other secret": {"X-Hub-Signature-256": sign(b"not-the-secret-0123456789", BODY)},
        "other body": {"X-Hub-Signature-256": sign(SECRET, other)},
        "sha1 form": {"X-Hub-Signature-256": "sha1=" + sign(SECRET, BODY)[7:47]},
        "bare hex": {"X-Hub-Signature-256": sign(SECRET, BODY)[7:]},
        "truncated": {"X-Hub-Signature-256": sign(SECRET, BODY)[:-2]},
    }
    for what, extra in tries.items():
        r = await post(served, "pr", **extra)
        assert r.status_code == 401, (what, r.text)
    # no token needed, and none helps: a bearer token is no signature
    async with served.api() as api:
        r = await api.post("/hooks/pr", content=BODY, headers=headers(BODY, **tries["missing"]))
        assert r.status_code == 401, r.text
    assert await agents(served) == []
    refused = [r.getMessage() for r in caplog.records if "refused a delivery" in r.getMessage()]
    assert len(refused) == len(tries) + 1
    assert all("Cache the parsed" not in m and "octo-org" not in m for m in refused)


async def test_an_unsigned_sender_cannot_tell_a_trigger_name_from_an_unknown_one(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Enumeration: a well-formed name no trigger has is answered exactly as a bad
    signature on a real trigger, so guessing names teaches nothing; both are audited."""
    caplog.set_level(logging.WARNING)
    wrong = {"X-Hub-Signature-256": sign(b"guessed-secret-0123456789", BODY)}
    real = await post(served, "pr", **wrong)
    unknown = await post(served, "deploy-prod", **wrong)
    assert (real.status_code, real.json()) == (unknown.status_code, unknown.json())
    assert unknown.status_code == 401
    assert await agents(served) == []
    refused = [r.getMessage() for r in caplog.records if "refused a delivery" in r.getMessage()]
    assert any("deploy-prod" in m and "unknown trigger" in m for m in refused)
    assert all("Cache the parsed" not in m for m in refused)


async def test_a_signed_body_that_is_no_json_object_or_nests_too_deep_is_refused(
    served: Served,
) -> None:
    for body in (b"[1, 2]", b"not json", b"[" * 200_000 + b"]" * 200_000, b'{"a": 1'):
        r = await post(served, "pr", body)
        assert r.status_code == 400, (body[:20], r.text)
    assert await agents(served) == []


async def test_a_replayed_delivery_is_refused_and_runs_once(served: Served) -> None:
    first = await post(served, "pr", **{"X-GitHub-Delivery": "abc-1"})
    assert first.status_code == 202, first.text
    again = await post(served, "pr", **{"X-GitHub-Delivery": "abc-1"})
    assert again.status_code == 409 and "seen before" in again.text
    no_id = await post(served, "pr", **{"X-GitHub-Delivery": ""})
    assert no_id.status_code == 400, no_id.text
    assert [a["id"] for a in await agents(served)] == [first.json()["agent"]]


async def test_a_flood_past_the_rate_is_refused(served: Served) -> None:
    codes = [(await post(served, "slow")).status_code for _ in range(5)]
    assert codes == [202, 202, 429, 429, 429]
    assert len(await agents(served)) == 2


async def test_an_oversized_body_is_refused_unread(served: Served) -> None:
    big = b'{"pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    r = await post(served, "pr", big)
    assert r.status_code == 413, r.text

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: chunked
        for _ in range(40):
            yield b"y" * 64 * 1024

    async with httpx.AsyncClient(base_url=served.info.url, timeout=60) as client:
        r = await client.post("/hooks/pr", content=streamed(), headers=headers(b""))
    assert r.status_code == 413, r.text
    assert await agents(served) == []


async def test_templates_reaching_for_python_are_refused_by_the_sandbox(
    served: Served, tmp_path: Path
) -> None:
    for name in ("mro", "globals", "mutate", "big"):
        r = await post(served, name)
        assert r.status_code == 422, (name, r.text)
    assert await agents(served) == []
    shown = deck(deck_env(tmp_path), "trigger", "show", "mro", "--json").json()
    assert shown["deliveries"][0]["status"] == 422
    assert shown["deliveries"][0]["agent_id"] is None


async def test_template_syntax_in_a_payload_is_data(served: Served) -> None:
    hostile = BODY.replace(
        b"Cache the parsed config between requests",
        b"{{ ''.__class__.__mro__ }} {% for x in payload %}{{ x }}{% endfor %}",
    )
    r = await post(served, "echo", hostile)
    assert r.status_code == 202, r.text

    async def prompt() -> str | None:
        for a in await agents(served):
            return str(a["spec"]["prompt"])
        return None

    said = await eventually(prompt, timeout=60, what="the agent's prompt")
    assert said == "Title: {{ ''.__class__.__mro__ }} {% for x in payload %}{{ x }}{% endfor %}"


async def test_a_loose_secret_file_a_foreign_host_and_other_methods_are_refused(
    served: Served, tmp_path: Path
) -> None:
    (tmp_path / "pr.secret").chmod(0o644)
    r = await post(served, "pr")
    assert r.status_code == 503 and "secret" in r.text
    (tmp_path / "pr.secret").chmod(0o600)
    assert (await post(served, "pr", Host="evil.example")).status_code == 421
    assert (await post(served, "..%2Fapi")).status_code == 404  # no trigger can have it
    async with httpx.AsyncClient(base_url=served.info.url, timeout=60) as client:
        assert (await client.get("/hooks/pr")).status_code == 405
    assert await agents(served) == []
