"""Containment of attachment paths inside the vault.

Attachment values are written by whoever edits the vault, so they are untrusted input: an
absolute path, a ``..`` escape or a symlink must never let ingestion read a file outside it.
"""
from __future__ import annotations

import os
import posixpath
from pathlib import Path, PureWindowsPath

from pipeline.types import PipelineError


def is_contained_rel_path(value: str) -> bool:
    """Whether ``value`` is, by its text alone, a relative path that stays inside the vault.

    Backslashes count as separators and Windows drives as absolute, because vaults are synced
    from Windows machines too; refusing ``..\\x`` on Linux costs nothing. This check touches no
    file system, so the selector can use it on every record; symlinks are ``resolve_attachment``'s job.
    """
    if not value or "\x00" in value or PureWindowsPath(value).anchor:
        return False
    normal = posixpath.normpath(value.replace("\\", "/"))
    return not (normal.startswith("/") or normal == ".." or normal.startswith("../") or normal == ".")


def resolve_attachment(vault: Path, rel_path: str) -> Path:
    """The real path of attachment ``rel_path``, guaranteed to lie inside ``vault``.

    The path is refused by its text first (absolute, ``..``), then resolved with every symlink
    followed and refused again when its real location leaves the vault's real location.

    TOCTOU: the answer is a check at one instant. The returned path has no symlinks left, so
    swapping a link in the *original* path later changes nothing, but someone who can write the
    vault could replace a directory of the real path with a link between this check and the
    open. The vault is the user's own folder, opened read-only, so we accept that window; a caller
    that needs more should open the returned path and compare ``os.fstat`` of the handle with a
    fresh ``os.stat`` of the path (same ``st_dev``/``st_ino``) before reading.
    """
    return AttachmentResolver(vault).resolve(rel_path)


class AttachmentResolver:
    """``resolve_attachment`` for many attachments of one vault: the vault's real location is
    looked up once, and paths are resolved as strings. The change check of an opening resolves
    every member's attachment; through ``pathlib`` each one cost ~130 µs, the vault's own path
    resolved again each time (bench/change_check.py, 1,000 resources). Each attachment is still
    resolved whole (``os.path.realpath``): remembering a folder's real location saved ~7 µs an
    attachment, but a folder moved out of the vault with a link left in its place keeps its
    identity, so no cheaper check tells that its files now lie outside."""

    def __init__(self, vault: Path) -> None:
        self._vault_real = os.path.realpath(vault)
        self._inside = os.path.join(self._vault_real, "")

    def resolve(self, rel_path: str) -> Path:
        if not is_contained_rel_path(rel_path):
            raise PipelineError("PATH_OUTSIDE_VAULT", f"attachment path {rel_path[:200]!r} leaves the vault")
        try:
            # Not strict: a link out of the vault to a missing file says "outside", as one to an
            # existing file does ("missing" would tell whoever plants links which outside paths
            # exist), and a loop or a missing file fails the file test below.
            real = os.path.realpath(os.path.join(self._vault_real, rel_path))
        except ValueError as exc:  # a name the file system cannot encode (a lone surrogate)
            raise PipelineError("ATTACHMENT_MISSING", f"attachment {rel_path[:200]!r} cannot be resolved") from exc
        if real != self._vault_real and not real.startswith(self._inside):
            raise PipelineError("PATH_OUTSIDE_VAULT", f"attachment path {rel_path[:200]!r} leaves the vault")
        if not os.path.isfile(real):
            raise PipelineError("ATTACHMENT_MISSING", f"attachment {rel_path[:200]!r} is not a file in the vault")
        return Path(real)
