"""The CLI's quick path reaching a deck by ``AGENTDECK_URL`` and ``AGENTDECK_TOKEN``:
a real daemon (``agentdeck up``) on one home, the commands run as the installed
script runs them on another home that has no daemon, so only the URL leads there."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from agentdeck.cli.decks import by_url
from agentdeck.cli.quick_url import named, reach
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from tests.cli.test_client import Played
from tests.cli.test_quick import AS_INSTALLED, LEAN, heavy, loaded_modules
from tests.support.daemonproc import Daemon
from tests.support.deckcli import Done, deck, deck_env
from tests.support.tls import pipe

pytestmark = pytest.mark.anyio

TOKEN = "adk_" + "t" * 40


@pytest.mark.parametrize(
    ("url", "token", "insecure"),
    [
        ("http://deck.example", TOKEN, ""),  # plain http off loopback
        ("http://deck.example", TOKEN, "no"),
        ("file:///etc/passwd", TOKEN, ""),
        ("https://user@deck.example", TOKEN, ""),
        ("https://deck.example/a/../b", TOKEN, ""),
        ("https://deck.example", "", ""),  # no token
        ("https://deck.example", "adk_x\r\nX-Evil: 1", ""),  # a header of its own
    ],
)
def test_a_url_the_deck_refuses_is_refused_here_in_its_words(
    tmp_path: Path, url: str, token: str, insecure: str
) -> None:
    settings = Settings(
        home=tmp_path, url=url, token=SecretStr(token) if token else None,
        allow_insecure_url=insecure.lower() in ("1", "true", "yes", "on"),
    )  # fmt: skip
    with pytest.raises(ConfigError) as theirs:
        by_url(settings)
    env = {"AGENTDECK_URL": url, "AGENTDECK_TOKEN": token, "AGENTDECK_ALLOW_INSECURE_URL": insecure}
    with pytest.raises(ConfigError) as ours:
        reach(tmp_path, env)
    assert ours.value.message == theirs.value.message
    if token:  # never echoed
        assert token not in ours.value.message


def test_a_url_is_read_as_the_settings_read_it(tmp_path: Path) -> None:
    # Any case, as pydantic-settings reads the environment; the insecure switch in
    # the settings' words; a trailing slash dropped; unset: the home (none runs).
    env = {"agentdeck_url": "http://deck.example/", "Agentdeck_Token": TOKEN}
    with pytest.raises(ConfigError):
        named(env)
    address = named({**env, "agentdeck_allow_insecure_url": "Yes"})
    assert address is not None and address.url == "http://deck.example"
    assert named({"AGENTDECK_URL": "https://[::1]:8443/deck", "AGENTDECK_TOKEN": TOKEN}) is not None
    assert reach(tmp_path, {"AGENTDECK_URL": "", "AGENTDECK_TOKEN": TOKEN}) is None


def test_a_url_with_a_path_is_asked_under_it_with_its_host_and_the_token() -> None:
    played = Played(lambda *a: (200, {"Content-Type": "application/json"}, [b'{"agents": []}']))
    played.thread.start()
    try:
        port = played.server.server_address[1]
        env = {"AGENTDECK_URL": f"http://localhost:{port}/deck/", "AGENTDECK_TOKEN": TOKEN}
        d = reach("/nonexistent", env)
        assert d is not None and d.get("/api/agents", {"limit": 5}) == {"agents": []}
    finally:
        played.server.shutdown()
        played.server.server_close()
    [(method, path, query, headers, _)] = played.requests
    assert (method, path, query) == ("GET", "/deck/api/agents", {"limit": ["5"]})
    assert headers["host"] == f"localhost:{port}"
    assert headers["authorization"] == f"Bearer {TOKEN}"


@pytest.fixture
async def served(tmp_path: Path, daemons: list[Daemon]) -> Daemon:
    """A daemon on its own home with one finished agent, ``q``."""
    env = deck_env(tmp_path / "served")
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    assert deck(env, "run", "--scenario", "chat", "--name", "q", "Hello! Who are you?").code == 0
    return daemon


def _client(tmp_path: Path, url: str, token: str, **extra: str) -> dict[str, str]:
    """A home with no daemon (nor database), the deck named by URL and token."""
    return deck_env(tmp_path / "client", AGENTDECK_URL=url, AGENTDECK_TOKEN=token, **extra)


def _one_line(done: Done) -> str:
    """The error the command printed: ``error: …`` and at most its hint."""
    lines = done.err.strip().splitlines()
    assert lines and lines[0].startswith("error: "), done.err
    assert len(lines) <= 2 and all(ln.startswith("  ") for ln in lines[1:]), done.err
    return lines[0].removeprefix("error: ")


@pytest.mark.cli
async def test_quick_commands_answer_from_the_deck_the_url_names(
    tmp_path: Path, served: Daemon
) -> None:
    env = _client(tmp_path, served.url, served.token)
    reads = [
        ("status", "--json"), ("ls", "--json"), ("show", "q"), ("logs", "q", "--json"),
        ("approvals", "--all"), ("asks",), ("queue", "--all"),
    ]  # fmt: skip
    outs: dict[str, str] = {}
    for args in reads:
        got, modules, errors = loaded_modules(env, *args, way=AS_INSTALLED)
        assert got == 0, (args, errors)
        assert heavy(modules) == set(), args  # still the quick path: no Typer, no store
        assert modules & LEAN == set(), args
        assert {"ssl", "socket"}.isdisjoint(modules), args  # plain http: no TLS loaded
    for args in reads[:4]:
        done = deck(env, *args)
        assert done.code == 0, (args, done.err)
        outs[args[0]] = done.out
        if args[0] != "status":  # the same answers as on the deck's own home
            assert done.out == deck(served.env, *args).out, args
    status = json.loads(outs["status"])
    assert status["running"] is True and status["url"] == served.url
    assert status["pid"] is None  # not this machine's to know
    assert [a["name"] for a in json.loads(outs["ls"])] == ["q"]
    assert "q" in outs["show"]
    logged = [json.loads(line)["type"] for line in outs["logs"].splitlines()]
    assert logged[0] == "agent_spawned" and "assistant_text" in logged
    said = deck(env, "status")
    assert said.code == 0 and said.out.startswith(f"agentdeck deck at {served.url}\n"), said
    # Nothing was looked for, or made, in the client's home.
    assert not (tmp_path / "client" / "home" / "agentdeck.db").exists()
    # A steering command goes there too (through the daemon: no store loaded here).
    got, modules, errors = loaded_modules(env, "kill", "q", "--json", way=AS_INSTALLED)
    assert got == 1 and errors.endswith("is done; cannot kill"), errors  # the deck's word
    assert heavy(modules) == set()
    missing = deck(env, "kill", "nope")
    assert missing.code != 0 and _one_line(missing) == "no agent with id 'nope'"
    # `down` stops a home's daemon, never the deck asked for: refused, that one runs on.
    down = deck(env, "down")
    assert down.code != 0
    assert "AGENTDECK_URL names the deck at" in _one_line(down)
    assert served.proc is not None and served.proc.poll() is None
    assert deck(env, "ls").code == 0


@pytest.mark.cli
async def test_a_wrong_token_a_refused_url_or_a_dead_deck_is_one_line_not_the_home(
    tmp_path: Path, served: Daemon
) -> None:
    # The served home itself (its daemon answers there) with a URL: the URL, not it.
    home = dict(served.env)
    wrong = deck({**home, "AGENTDECK_URL": served.url, "AGENTDECK_TOKEN": "not-the-token"}, "ls")
    assert wrong.code != 0 and wrong.out == ""
    bad_token = deck({**home, "AGENTDECK_TOKEN": "not-the-token"}, "ls")  # no URL: home's
    assert bad_token.code == 0, bad_token.err
    denied = _one_line(wrong)
    assert denied.startswith("missing, wrong, revoked or expired token")

    # Plain http off loopback: refused before anything is sent, cli/decks.py's words.
    far = "http://192.0.2.7:8765"
    with pytest.raises(ConfigError) as refused:
        by_url(Settings(home=tmp_path / "x", url=far, token="t0ken"))
    for args in (("status",), ("ls",), ("approvals",), ("asks",), ("run", "hi")):
        done = deck({**home, "AGENTDECK_URL": far, "AGENTDECK_TOKEN": served.token}, *args)
        assert done.code != 0 and done.out == "", args
        assert _one_line(done) == refused.value.message, args
    # A URL without a token: the same refusal the settings' deck gives.
    with pytest.raises(ConfigError) as no_token:
        by_url(Settings(home=tmp_path / "x", url=served.url))
    done = deck({**home, "AGENTDECK_URL": served.url}, "ls")
    assert done.code != 0 and _one_line(done) == no_token.value.message

    # A deck that does not answer: the dead daemon's line, not the home's answer.
    dead = deck({**home, "AGENTDECK_URL": "http://127.0.0.1:9", "AGENTDECK_TOKEN": "t"}, "ls")
    assert dead.code != 0 and dead.out == ""
    assert _one_line(dead).startswith("the agentdeck daemon at http://127.0.0.1:9 did not answer")

    # A wrong token by URL says what a wrong token in the home says (last: the
    # home's token file is spoilt; the daemon holds its own in memory).
    (served.home / "token").write_text("not-the-token\n")
    spoilt = deck(home, "ls")
    assert spoilt.code == wrong.code and _one_line(spoilt) == denied


def _self_signed(where: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@contextlib.asynccontextmanager
async def _tls_proxy(cert: Path, key: Path, port: int) -> AsyncIterator[int]:
    """TLS in front of the daemon (as a reverse proxy puts it): the port it listens on."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


@pytest.mark.cli
async def test_an_https_url_is_verified_and_answered(tmp_path: Path, served: Daemon) -> None:
    cert, key = _self_signed(tmp_path)
    async with _tls_proxy(cert, key, int(str(served.info["port"]))) as port:
        url = f"https://localhost:{port}"
        trusted = _client(tmp_path, url, served.token, SSL_CERT_FILE=str(cert))
        got, modules, errors = await asyncio.to_thread(
            loaded_modules, trusted, "ls", "--json", way=AS_INSTALLED
        )
        assert got == 0, errors
        assert "ssl" in modules and heavy(modules) == set()
        done = await asyncio.to_thread(deck, trusted, "ls", "--json")
        assert done.code == 0 and [a["name"] for a in json.loads(done.out)] == ["q"]
        # The same deck with a certificate nobody vouched for: refused, one line.
        untrusted = _client(tmp_path, url, served.token)
        refused = await asyncio.to_thread(deck, untrusted, "ls")
        assert refused.code != 0 and refused.out == ""
        assert "CERTIFICATE_VERIFY_FAILED" in _one_line(refused)
