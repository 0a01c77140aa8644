"""One error mapping, both directions: every error class of ``agentdeck.errors``,
raised in a real web app with the daemon's own error rendering (``web.app``),
served by uvicorn, comes back out of both clients (the CLI's blocking one and the
asynchronous one) as the same class, with its status, message, hint and fields."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn
from fastapi import FastAPI

from agentdeck import errors
from agentdeck.client.http import DaemonHTTP
from agentdeck.client.quick import Daemon
from agentdeck.daemon.home import DaemonInfo
from agentdeck.errors import AgentdeckError, from_wire, to_wire
from agentdeck.web.app import render_error

pytestmark = pytest.mark.anyio

SAMPLES: dict[str, AgentdeckError] = {
    e.__class__.__name__: e
    for e in [
        errors.AgentdeckError("it broke", hint="look at the log"),
        errors.UsageError("--limit must be positive", hint="give 1 or more"),
        errors.OutOfRange("a reference longer than any agent's"),
        errors.NotFound("approval request", "r9", hint="`agentdeck approvals` lists them"),
        errors.ConfigError("the home is not writable", hint="check AGENTDECK_HOME"),
        errors.ScenarioError("chat.yaml", "a turn without a reply", turn=2),
        errors.StoreError("the database could not be migrated"),
        errors.DiskFull("the disk is full: nothing was written"),
        errors.AgentProcessError("Claude Code exited", exit_code=3, stderr="boom"),
        errors.CLINotFound("claude is not installed", hint="npm i -g @anthropic-ai/claude-code"),
        errors.InvalidState("a1", "done", "interrupt"),
        errors.TemplateError(["a.yaml: unknown key 'modle'", "b.yaml: tools is not a list"]),
        errors.WorktreeError("not a git repository: /tmp/x"),
        errors.SandboxUnavailable("bubblewrap is missing", hint="apt install bubblewrap"),
        errors.Refused("the budget of the tree is used up"),
        errors.Fenced("h1", "a1", 3),
        errors.SecretNotKept("the first prompt held a secret"),
        errors.ShuttingDown(),
        errors.Forbidden("this needs the admin role; bob is operator"),
        errors.PolicyDenied("rm is denied", rule="Bash(rm:*)"),
        errors.PolicyError("policy.yaml", "an empty rule", line=3),
        errors.DeliveryFailed("hook", "answered 500"),
        errors.DaemonUnavailable("the daemon went away", hint="start it"),
        errors.BrokenStream("the stream broke at line 3"),
    ]
}


def test_every_error_class_has_a_sample() -> None:
    ours = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, AgentdeckError)
    }
    assert ours == set(SAMPLES), "a new error class needs a sample here"


def app() -> FastAPI:
    made = FastAPI()
    made.add_exception_handler(AgentdeckError, render_error)  # type: ignore[arg-type]

    @made.post("/raise/{name}")
    async def raise_it(name: str) -> None:
        raise SAMPLES[name]

    return made


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[int]:
    """The app on a real port: listening before uvicorn starts, so a request made
    at once waits in the backlog rather than being refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    # log_config=None: no process-wide logging set-up (dictConfig would stop "uvicorn"
    # records propagating, and a later test reading the access log in caplog fails).
    config = uvicorn.Config(app(), log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        sock.close()


def same(rebuilt: AgentdeckError, sample: AgentdeckError) -> None:
    assert type(rebuilt) is type(sample)
    assert rebuilt.http_status == sample.http_status
    assert (rebuilt.message, rebuilt.hint) == (sample.message, sample.hint)
    assert str(rebuilt) == str(sample) and rebuilt.exit_code == sample.exit_code
    for _, attribute in sample.wire_fields:
        assert getattr(rebuilt, attribute) == getattr(sample, attribute)


@pytest.mark.parametrize("name", sorted(SAMPLES))
async def test_the_daemons_error_comes_back_as_the_same_class(name: str) -> None:
    sample = SAMPLES[name]
    async with served() as port:
        info = DaemonInfo(pid=1, host="127.0.0.1", port=port, started_at=0.0)
        http = DaemonHTTP(info.url, "tok", client="cli")
        try:
            with pytest.raises(AgentdeckError) as async_raised:
                await http.call("POST", f"/raise/{name}")
        finally:
            await http.aclose()
        quick = Daemon(info, "tok")
        with pytest.raises(AgentdeckError) as quick_raised:
            await asyncio.to_thread(quick.post, f"/raise/{name}")
    same(async_raised.value, sample)
    same(quick_raised.value, sample)


def test_the_body_keeps_its_shape() -> None:
    missing = errors.NotFound("agent", "x1", hint="`agentdeck ls`")
    assert to_wire(missing) == {
        "error": {
            "status": 404,
            "message": "no agent with id 'x1'",
            "hint": "`agentdeck ls`",
            "type": "NotFound",
            "kind": "agent",
            "id": "x1",
        }
    }


@pytest.mark.parametrize(
    ("status", "body", "cls", "message"),
    [
        (409, {"error": {"message": "agent x is done"}}, errors.InvalidState, "agent x is done"),
        (422, {"error": {"message": "invalid limit"}}, errors.UsageError, "invalid limit"),
        (400, {"error": {"message": "bad"}}, errors.UsageError, "bad"),
        (403, {"error": {"message": "admins only"}}, errors.Forbidden, "admins only"),
        (502, b"<html>bad gateway</html>", AgentdeckError, "daemon answered 502"),
        (500, {"error": "not our shape"}, AgentdeckError, "daemon answered 500"),
        # A subclass defined outside the tree: the class its status means.
        (409, {"error": {"message": "no", "type": "ToolError"}}, errors.InvalidState, "no"),
        # A name that is not an error class, or one whose status is not the answer's.
        (500, {"error": {"message": "m", "type": "TYPE_CHECKING"}}, AgentdeckError, "m"),
        (500, {"error": {"message": "m", "type": "__builtins__"}}, AgentdeckError, "m"),
        (500, {"error": {"message": "m", "type": "NotFound"}}, AgentdeckError, "m"),
        (404, {"error": {"message": "m", "type": "Exception"}}, errors.NotFound, "m"),
    ],
)
def test_an_answer_without_a_type_we_know_is_the_class_its_status_means(
    status: int, body: object, cls: type[AgentdeckError], message: str
) -> None:
    if isinstance(body, bytes):
        rebuilt = errors.from_body(status, body, "/api/x")
    else:
        rebuilt = from_wire(status, body, "/api/x")
    assert type(rebuilt) is cls and rebuilt.message == message


def test_a_404_that_names_nothing_names_the_path_asked_for() -> None:
    rebuilt = from_wire(404, {"error": {"status": 404, "message": "Not Found"}}, "/api/nope")
    assert isinstance(rebuilt, errors.NotFound)
    assert (rebuilt.kind, rebuilt.ident, rebuilt.message) == ("resource", "/api/nope", "Not Found")
