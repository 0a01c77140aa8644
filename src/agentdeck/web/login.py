"""The dashboard's login: a form that takes a token and starts a session.

``GET /login`` shows the form; ``POST /login`` (form field ``token``) checks the
token and sets the session cookie, a random id the daemon maps to the user (the
token itself never reaches the browser's cookie jar). The URL ``agentdeck up``
prints (``/login?token=...``) still logs in, then redirects, so the token does
not stay in the address bar; the query is blanked before the access log sees
it. ``POST /logout`` ends the session. Sessions expire
(``AGENTDECK_SESSION_TTL_SECONDS``) and end when their token is revoked.
"""

from __future__ import annotations

import html
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import Message, Receive, Scope, Send

from agentdeck.daemon.deck import Identity

COOKIE = "agentdeck_session"
MAX_FORM_BYTES = 4096

_FORM = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>agentdeck · log in</title>
<style>
body{font:15px system-ui,sans-serif;max-width:28rem;margin:10vh auto;padding:0 1rem}
input,button{font:inherit;padding:.4rem;margin:.3rem 0;width:100%}
.error{color:#b91c1c} .muted{color:#666;font-size:13px}
</style></head>
<body><main class="login"><h1>agentdeck</h1>{note}
<form method="post" action="/login">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button></form>
<p class="muted">The token is in <code>$AGENTDECK_HOME/token</code> (the admin's), or one
from <code>agentdeck tokens create</code>.</p></main></body></html>"""


def session_of(headers: dict[str, str]) -> str:
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # noqa: BLE001 - a malformed cookie header is simply no login
        return ""
    morsel = cookie.get(COOKIE)
    return "" if morsel is None else morsel.value


async def handle(
    identity: Identity, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
) -> None:
    method = scope["method"]
    if scope["path"] == "/logout":
        if method != "POST":
            await _page(send, 405, "use the Log out button")
            return
        await identity.logout(session_of(headers))
        await _redirect(send, "/login", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        return
    if method in ("GET", "HEAD"):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        # uvicorn's access log prints the path with this scope's query string
        # when the response starts: the token must not end up in the logs.
        scope["query_string"] = b""
        given = (query.get("token") or [""])[0]
        if not given:
            await _page(send, 200, "")
            return
        await _login(identity, send, given)
        return
    if method == "POST":
        body = await _read_form(receive)
        if body is None:
            await _page(send, 413, "the form is too large")
            return
        await _login(identity, send, (parse_qs(body).get("token") or [""])[0].strip())
        return
    await _page(send, 405, "use the form")


async def _login(identity: Identity, send: Send, token: str) -> None:
    started = await identity.login(token) if token else None
    if started is None:
        await _page(send, 401, "wrong, revoked or expired token")
        return
    session_id, principal = started
    max_age = ""
    if principal.expires_at is not None:
        import time

        max_age = f"; Max-Age={max(1, int(principal.expires_at - time.time()))}"
    cookie = f"{COOKIE}={session_id}; Path=/; HttpOnly; SameSite=Strict{max_age}"
    await _redirect(send, "/", cookie)


async def _read_form(receive: Receive) -> str | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return ""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks).decode("utf-8", "replace")


async def _redirect(send: Send, location: str, cookie: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode()),
                (b"set-cookie", cookie.encode()),
                (b"cache-control", b"no-store"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _page(send: Send, status: int, note: str) -> None:
    text = f'<p class="error" role="alert">{html.escape(note)}</p>' if note else ""
    body = _FORM.replace("{note}", text).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})
