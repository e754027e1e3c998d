"""Exponential backoff after failed sign-ins, per account and per client address.

Kept in the database every web process shares, so a guesser gains nothing by spreading attempts
over processes. An account locks after a few consecutive failures (a guesser aiming at one
account); an address only after many (several people may share one address behind a NAT). A
correct password clears the account's count but not the address's: otherwise signing in to one's
own account between guesses would reset the address. Counts older than ``FORGET_AFTER`` start over.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from storage.models import SignInFailure, utcnow

FORGET_AFTER = timedelta(minutes=15)
MAX_LOCK = timedelta(minutes=15)


@dataclass(frozen=True)
class Guarded:
    """A key and how many consecutive failures it may have before each further one locks it."""

    key: str
    free_failures: int


def account(vault_hash: str, name: str) -> Guarded:
    return Guarded(f"account:{vault_hash}:{name.casefold()}", 5)


def address(remote_addr: str) -> Guarded:
    return Guarded(f"address:{remote_addr}", 20)


def locked_for(session: Session, keys: list[Guarded]) -> float:
    """Seconds until every key may try again (0 when none is locked)."""
    now = utcnow()
    until = session.scalars(
        select(SignInFailure.locked_until).where(
            SignInFailure.key.in_([k.key for k in keys]), SignInFailure.locked_until > now
        )
    ).all()
    return max(((u - now).total_seconds() for u in until), default=0.0)


def record_failure(session: Session, keys: list[Guarded]) -> None:
    now = utcnow()
    for guarded in keys:
        row = session.get(SignInFailure, guarded.key)
        if row is None:
            row = SignInFailure(key=guarded.key, failures=0, last_failure_at=now)
            session.add(row)
        elif row.last_failure_at < now - FORGET_AFTER:
            row.failures = 0
        row.failures += 1
        row.last_failure_at = now
        row.locked_until = _lock_end(now, row.failures - guarded.free_failures)


def _lock_end(now: datetime, over: int) -> datetime | None:
    """1 s after the first failure past the free ones, doubling up to ``MAX_LOCK``."""
    if over < 1:
        return None
    return now + min(timedelta(seconds=2 ** min(over - 1, 20)), MAX_LOCK)


def record_success(session: Session, guarded: Guarded) -> None:
    session.execute(delete(SignInFailure).where(SignInFailure.key == guarded.key))
