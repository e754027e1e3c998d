"""Stored drive authorisations, encrypted at rest with Fernet (AES-128-CBC + HMAC-SHA256).

A refresh token lets whoever holds it read the owner's Drive, so the database keeps only its
ciphertext. The key is derived from the instance's secret with HKDF-SHA256 (the secret may be any
string; HKDF's ``info`` keeps this key apart from others derived from the same secret). A wrong
key or a changed ciphertext reads as no authorisation at all: the owner must authorise again.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from pipeline.connectors.base import DRIVE_NOT_AUTHORIZED
from pipeline.types import PipelineError

KEY_INFO = b"gnosi drive authorization"


def encrypt_authorization(instance_secret: str, authorization: dict[str, Any]) -> str:
    """``authorization`` (JSON-able) as a Fernet token to store."""
    return _fernet(instance_secret).encrypt(json.dumps(authorization).encode("utf-8")).decode("ascii")


def decrypt_authorization(instance_secret: str, stored: str) -> dict[str, Any]:
    """The authorisation ``encrypt_authorization`` stored; ``DRIVE_NOT_AUTHORIZED`` when it was
    made with another secret or changed since."""
    fernet = _fernet(instance_secret)
    try:
        authorization = json.loads(fernet.decrypt(stored))
    except (InvalidToken, TypeError, ValueError):
        authorization = None
    if not isinstance(authorization, dict):
        raise PipelineError(
            DRIVE_NOT_AUTHORIZED,
            "The stored Google Drive authorization cannot be read (was the instance secret changed?); "
            "the document owner must authorize again.",
        )
    return authorization


def _fernet(instance_secret: str) -> Fernet:
    if not instance_secret:
        raise ValueError("an instance secret is needed to encrypt drive authorizations")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=KEY_INFO)
    key = hkdf.derive(instance_secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(key))
