"""How tokens are kept at rest: never in plain text. Pure (hashlib only).

A token is 256 random bits. Two values are stored for it:

* ``lookup``: the first 16 hex digits of its SHA-256. Indexed, so finding the
  candidate row costs one fast hash; too short to confirm a token on its own.
* ``digest``: scrypt of the token with a per-token salt, checked once a
  candidate is found. This is what proves the token; the daemon remembers a
  proven token (by its full SHA-256, in memory only) so that each later request
  costs one SHA-256 and a dictionary look-up, not a 16 MB scrypt.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
MIN_CHARS = 16  # the shortest token kept (one of our own has 43)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def lookup_key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def fingerprint(token: str) -> str:
    """The in-memory key of a proven token (never stored)."""
    return hashlib.sha256(b"agentdeck-token-v1:" + token.encode()).hexdigest()


def new_salt() -> str:
    return secrets.token_hex(SALT_BYTES)


def digest(token: str, salt: str) -> str:
    return hashlib.scrypt(
        token.encode(), salt=bytes.fromhex(salt), n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32
    ).hex()


def verify(token: str, salt: str, expected: str) -> bool:
    return hmac.compare_digest(digest(token, salt), expected)
