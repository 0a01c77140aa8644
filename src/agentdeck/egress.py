"""How agentdeck's own proxies reach the outside for an agent: as the agent's Claude
Code would have without them, so that neither recording nor a sandbox changes
whether an agent reaches its hosts (a corporate gateway's private CA, egress only
through a proxy). The recording proxy (``runner/recording``) takes all of it; the
sandbox's allowlist proxy (``sandbox/proxy.py``) takes the proxy variables (and
the trust, for an ``https://`` proxy).

Read from the environment the agent's Claude Code inherits (the daemon's; agentdeck
adds none of these variables itself, and a sandbox's own ``HTTPS_PROXY`` is for the
confined process, not for the proxy, which runs outside it), the variables Claude
Code honours (2.1.x, its network configuration and its bundled CLI):

- trust: ``CLAUDE_CODE_CERT_STORE`` (``bundled``, ``system``, or both: the default)
  picks the stores, ``bundled`` being Mozilla's roots (certifi's here) and ``system``
  OpenSSL's default file and directory, which ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
  replace; ``NODE_EXTRA_CA_CERTS`` adds a PEM file of CAs to those.
- its client certificate: ``CLAUDE_CODE_CLIENT_CERT``, ``CLAUDE_CODE_CLIENT_KEY``,
  ``CLAUDE_CODE_CLIENT_KEY_PASSPHRASE``.
- the proxy: ``https_proxy``/``HTTPS_PROXY`` (then ``all_proxy``/``ALL_PROXY``) for
  an https upstream, ``http_proxy``/``HTTP_PROXY`` for a plain one; none for a host
  that ``no_proxy``/``NO_PROXY`` covers (commas or spaces between entries; ``*``
  all; ``.example.com`` or ``*.example.com`` its subdomains; ``example.com`` that
  host only; ``host:port`` that port only; an address or a CIDR network).

A file these variables name that cannot be read (missing, unreadable, no PEM in
it) is a logged warning naming the variable, and the client goes on without it:
what Claude Code itself does ("Failed to read NODE_EXTRA_CA_CERTS file", then its
default CAs). Refusing the agent instead would make a recorded agent fail where
the same agent unrecorded runs (its upstream may well be signed by a public CA);
when the CA was needed, the first exchange's ``upstream_error`` in the cassette
names the certificate failure and the agent gets a 502.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

logger = logging.getLogger(__name__)

EXTRA_CA_VAR = "NODE_EXTRA_CA_CERTS"
STORES = ("bundled", "system")
_PROXIES = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "http_proxy", "HTTP_PROXY")


@dataclass(frozen=True)
class Trust:
    """What the TLS of the proxy's client trusts and presents (see the module)."""

    stores: tuple[str, ...] = STORES
    system_file: str | None = None  # SSL_CERT_FILE
    system_dir: str | None = None  # SSL_CERT_DIR
    extra_file: str | None = None  # NODE_EXTRA_CA_CERTS
    client_cert: str | None = None
    client_key: str | None = None
    key_passphrase: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, environ: Mapping[str, str]) -> Trust:
        return cls(
            stores=_stores(_get(environ, "CLAUDE_CODE_CERT_STORE")),
            system_file=_get(environ, "SSL_CERT_FILE"),
            system_dir=_get(environ, "SSL_CERT_DIR"),
            extra_file=_get(environ, EXTRA_CA_VAR),
            client_cert=_get(environ, "CLAUDE_CODE_CLIENT_CERT"),
            client_key=_get(environ, "CLAUDE_CODE_CLIENT_KEY"),
            key_passphrase=_get(environ, "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE"),
        )

    def context(self) -> ssl.SSLContext:
        """The TLS context (20-40 ms of CPU: loads CA files; not on the event loop)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies peer and host name
        if "bundled" in self.stores:
            import certifi

            ctx.load_verify_locations(cafile=certifi.where())
        if "system" in self.stores:
            paths = ssl.get_default_verify_paths()
            _load(ctx, self.system_file, "SSL_CERT_FILE", paths.openssl_cafile, folder=False)
            _load(ctx, self.system_dir, "SSL_CERT_DIR", paths.openssl_capath, folder=True)
        if self.extra_file is not None:
            try:
                ctx.load_verify_locations(cafile=self.extra_file)
            except (OSError, ssl.SSLError) as exc:
                _unusable(EXTRA_CA_VAR, self.extra_file, exc, "the default CAs only")
        if self.client_cert is not None:
            try:
                ctx.load_cert_chain(self.client_cert, self.client_key, self.key_passphrase)
            except (OSError, ssl.SSLError) as exc:
                _unusable("CLAUDE_CODE_CLIENT_CERT", self.client_cert, exc, "no client certificate")
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


@dataclass(frozen=True)
class Reach:
    """How one upstream is reached: what makes two of the proxy's clients differ.
    ``trust`` is None when no TLS is spoken (a plain upstream, directly or through
    a plain proxy)."""

    proxy: str | None
    trust: Trust | None

    @classmethod
    def of(cls, upstream: str, environ: Mapping[str, str] | None = None) -> Reach:
        env = os.environ if environ is None else environ
        https = not upstream.lower().startswith("http://")
        proxy = proxy_for(upstream, env)
        tls = https or (proxy is not None and proxy.lower().startswith("https://"))
        return cls(proxy, Trust.of(env) if tls else None)


def proxy_for(upstream: str, environ: Mapping[str, str]) -> str | None:
    """The proxy Claude Code would take to ``upstream``, None for none (see the module)."""
    parts = urlsplit(upstream if "://" in upstream else f"https://{upstream}")
    https = parts.scheme.lower() != "http"
    names = (
        ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
        if https
        else ("http_proxy", "HTTP_PROXY")
    )
    proxy = next((v for v in (_get(environ, n) for n in names) if v is not None), None)
    if proxy is None:
        return None
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or (443 if https else 80)
    if bypassed(host, port, _get(environ, "no_proxy") or _get(environ, "NO_PROXY") or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def past_proxies(url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """What the agent's Claude Code is told so that it reaches the recording proxy at
    ``url`` (this machine's loopback) directly: its ``NO_PROXY`` and ``no_proxy`` with
    the proxy's host added, when the environment names a proxy that does not already
    leave that host out. Claude Code sends a request for a plain-http base URL
    through ``HTTP_PROXY`` otherwise: the agent's key in clear to the gateway, which
    cannot reach this loopback anyway (unrecorded, the same request went through a
    TLS tunnel to the real endpoint). Nothing when no proxy is set."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    if not any(_get(environ, name) for name in _PROXIES):
        return {}
    out: dict[str, str] = {}
    for name, other in (("NO_PROXY", "no_proxy"), ("no_proxy", "NO_PROXY")):
        base = _get(environ, name) or _get(environ, other) or ""
        out[name] = base if bypassed(host, port, base) else ",".join(filter(None, (base, host)))
    return out


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``no_proxy`` (the variable's value) covers ``host:port``."""
    host = host.strip("[]").lower()
    for entry in no_proxy.replace(",", " ").split():
        if entry == "*":
            return True
        name, wanted = entry.lower(), None
        if ":" in name and not name.endswith("]") and name.count(":") == 1:
            name, _, given = name.partition(":")
            wanted = int(given) if given.isdigit() else -1
        elif name.startswith("[") and "]:" in name:
            name, _, given = name.partition("]:")
            wanted = int(given) if given.isdigit() else -1
        if wanted is not None and wanted != port:
            continue
        name = name.strip("[]").rstrip(".")
        if name.startswith(("*.", ".")):
            if host.endswith(name.lstrip("*")):
                return True
        elif host == name or _in_network(host, name):
            return True
    return False


def client(timeout: float, reach: Reach) -> httpx.AsyncClient:
    """The proxy's client for upstreams reached alike (``Recorder._client_for``). With
    no TLS to speak, a context that trusts no one (and costs nothing to make)."""
    ctx = reach.trust.context() if reach.trust else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=10.0),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        follow_redirects=False,
        trust_env=False,  # the environment is read here, as Claude Code reads it
        verify=ctx,
        proxy=_proxy(reach.proxy, ctx),
    )


def _proxy(url: str | None, ctx: ssl.SSLContext) -> httpx.Proxy | None:
    """An https proxy's own certificate is judged as the upstream's would be."""
    if url is None:
        return None
    https = url.lower().startswith("https://")
    return httpx.Proxy(url, ssl_context=ctx) if https else httpx.Proxy(url)


def _get(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None


def _stores(value: str | None) -> tuple[str, ...]:
    wanted = [s.strip().lower() for s in (value or "").split(",")]
    kept = tuple(s for s in STORES if s in wanted)
    if value is not None and not kept:
        logger.warning("CLAUDE_CODE_CERT_STORE=%r names no store: both are trusted", value)
    return kept or STORES


def _load(ctx: ssl.SSLContext, given: str | None, var: str, default: str, *, folder: bool) -> None:
    where = Path(given or default)
    there = where.is_dir() if folder else where.is_file()
    if not given and not there:
        return  # this system keeps none there: nothing to say
    try:
        if not there:
            raise FileNotFoundError(f"no {'directory' if folder else 'file'} {where}")
        if folder:
            ctx.load_verify_locations(capath=where)
        else:
            ctx.load_verify_locations(cafile=where)
    except (OSError, ssl.SSLError) as exc:
        if given:
            _unusable(var, str(where), exc, "the other CAs")


def _unusable(var: str, path: str, exc: BaseException, instead: str) -> None:
    logger.warning(
        "agentdeck's proxy could not use %s=%s (%s): going on with %s, as Claude Code does",
        var,
        path,
        exc,
        instead,
    )


def _in_network(host: str, entry: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
        return address in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
