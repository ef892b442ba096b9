"""Per-tenant API keys: random tokens, stored only as their sha256 plus a short display prefix.

A key is ``rgx_`` + 43 url-safe characters (32 random bytes). It is shown once, when created;
the truth store keeps ``sha256(key)`` (looked up on every request) and the first 12 characters
(so ``keys list`` can show which key is which). A revoked key stops working at once.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from ragindex.errors import NotFoundError, ValidationError
from ragindex.fields import pick
from ragindex.service.store import ApiKeyRow, ApiKeyStore

KEY_PREFIX = "rgx_"
DISPLAY_CHARS = 12


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for: the key's tenant and role."""

    key_id: str
    user_id: int
    admin: bool


def hash_key(key: str) -> str:
    """Hex sha256 of a key (what the store keeps)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(store: ApiKeyStore, *, user_id: int, admin: bool = False, name: str | None = None) -> dict[str, Any]:
    """Create a key for ``user_id``; the returned ``key`` is the only time the secret exists outside the caller."""
    if user_id <= 0:
        raise ValidationError("user_id", f"must be a positive integer; got {user_id}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    key_id = secrets.token_hex(8)
    prefix = key[:DISPLAY_CHARS]
    store.create_api_key(key_id=key_id, key_hash=hash_key(key), prefix=prefix, user_id=user_id, admin=admin, name=name)
    return {"key": key, "key_id": key_id, "prefix": prefix, "user_id": user_id, "admin": admin, "name": name}


def authenticate(store: ApiKeyStore, key: str) -> Principal | None:
    """The principal of an un-revoked key, or None (unknown, malformed or revoked)."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    owner = store.key_owner(hash_key(key))
    if owner is None:
        return None
    key_id, user_id, admin = owner
    return Principal(key_id=key_id, user_id=user_id, admin=admin)


def describe(row: ApiKeyRow) -> dict[str, Any]:
    """A key as ``keys list`` shows it (no secret: the hash is not shown either)."""
    return {
        **pick(row, "key_id", "prefix", "user_id", "admin", "name"),
        "created_at": row.created_at.isoformat(timespec="seconds"),
        "revoked_at": row.revoked_at.isoformat(timespec="seconds") if row.revoked_at else None,
    }


def revoke_key(store: ApiKeyStore, key_id: str) -> None:
    """Revoke a key; NotFoundError when no active key has this id."""
    if not store.revoke_api_key(key_id):
        raise NotFoundError(f"no active API key with id {key_id!r}", key_id=key_id)
