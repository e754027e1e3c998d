"""The folder connector on real directories: what it lists, how it pages, what it refuses."""
from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.connectors.base import (
    FILE_TOO_LARGE,
    FILE_UNAVAILABLE,
    FOLDER_NOT_ALLOWED,
    FOLDER_UNAVAILABLE,
    all_files,
)
from pipeline.connectors.folder import FolderConnector
from pipeline.types import PipelineError

NOBODY = 65534


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


def make_folder(root: Path, name: str = "papers") -> Path:
    folder = root / name
    folder.mkdir()
    return folder


def code_of(call: object) -> str:
    with pytest.raises(PipelineError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code


def test_lists_regular_files_sorted_with_metadata(root: Path) -> None:
    folder = make_folder(root)
    (folder / "b.pdf").write_bytes(b"%PDF-1.7 b")
    (folder / "a.txt").write_text("alpha")
    (folder / ".hidden").write_text("not listed")
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.txt").write_text("no recursion")
    (folder / os.fsdecode(b"caf\xe9.txt")).write_text("a Latin-1 name: no record could hold it")
    os.utime(folder / "a.txt", ns=(0, 1_764_496_800_123_456_789))

    connector = FolderConnector((root,))
    page = connector.list_files(str(folder))

    assert [f.name for f in page.files] == ["a.txt", "b.pdf"]
    assert page.next_page_token is None
    first = page.files[0]
    assert first.id == "a.txt" and first.size == 5 and first.mime_type == "text/plain"
    assert first.modified_time == datetime(2025, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)
    assert page.files[1].mime_type == "application/pdf"


def test_folder_metadata_is_the_resolved_path(root: Path) -> None:
    folder = make_folder(root)
    (root / "alias").symlink_to(folder)

    info = FolderConnector((root,)).folder(str(root / "alias"))

    assert info.id == str(folder.resolve()) and info.name == "papers"


def test_pages_of_the_configured_size_cover_every_file_once(root: Path) -> None:
    folder = make_folder(root)
    names = [f"note-{n:03d}.md" for n in range(250)]
    for name in names:
        (folder / name).write_text(name)
    connector = FolderConnector((root,))

    first = connector.list_files(str(folder))

    assert len(first.files) == 100 and first.next_page_token
    assert [f.name for f in all_files(connector, str(folder))] == names
    assert len(FolderConnector((root,), page_size=50).list_files(str(folder)).files) == 50


def test_a_full_last_page_has_no_next_page(root: Path) -> None:
    folder = make_folder(root)
    for n in range(4):
        (folder / f"{n}.txt").write_text("x")
    connector = FolderConnector((root,), page_size=2)

    second = connector.list_files(str(folder), connector.list_files(str(folder)).next_page_token)

    assert [f.name for f in second.files] == ["2.txt", "3.txt"] and second.next_page_token is None


def test_a_file_added_between_pages_is_not_lost_or_repeated(root: Path) -> None:
    folder = make_folder(root)
    for name in ("a", "c", "e", "g"):
        (folder / name).write_text(name)
    connector = FolderConnector((root,), page_size=2)

    page = connector.list_files(str(folder))
    (folder / "f").write_text("added after the first page")
    (folder / "b").write_text("added before the page token: seen next sync")
    names = [f.name for f in page.files]
    while page.next_page_token:
        page = connector.list_files(str(folder), page.next_page_token)
        names += [f.name for f in page.files]

    assert names == ["a", "c", "e", "f", "g"]


def test_touch_changes_the_modified_time_and_an_added_file_appears(root: Path) -> None:
    folder = make_folder(root)
    (folder / "a.txt").write_text("one")
    os.utime(folder / "a.txt", ns=(0, 1_000_000_000_000_000_000))
    connector = FolderConnector((root,))
    before = connector.list_files(str(folder)).files

    os.utime(folder / "a.txt", ns=(0, 1_000_000_000_000_001_000))  # one microsecond later
    (folder / "b.txt").write_text("two")
    after = connector.list_files(str(folder)).files

    assert [f.name for f in after] == ["a.txt", "b.txt"]
    assert after[0].modified_time != before[0].modified_time
    assert (after[0].modified_time - before[0].modified_time).microseconds == 1


def test_an_empty_folder_has_no_files(root: Path) -> None:
    folder = make_folder(root)

    page = FolderConnector((root,)).list_files(str(folder))

    assert page.files == [] and page.next_page_token is None


@pytest.mark.parametrize("kind", ["missing", "a file", "a dangling symlink"])
def test_a_folder_that_is_not_there_is_unavailable(root: Path, kind: str) -> None:
    path = root / "papers"
    if kind == "a file":
        path.write_text("not a folder")
    elif kind == "a dangling symlink":
        path.symlink_to(root / "nowhere")
    connector = FolderConnector((root,))

    assert code_of(lambda: connector.folder(str(path))) == FOLDER_UNAVAILABLE
    assert code_of(lambda: connector.list_files(str(path))) == FOLDER_UNAVAILABLE


@contextmanager
def reading_as_nobody() -> Iterator[None]:
    """Root reads a folder whatever its mode, so a root run drops its effective uid to nobody
    around the read (and takes it back after); other users read as themselves."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A root that 'nobody' may traverse (pytest's tmp_path is private to its user), so that
    a denied read is the folder's own mode and not its parents'."""
    made = Path(tempfile.mkdtemp(prefix="gnosi-folder-test-"))
    made.chmod(0o755)
    yield made
    for path in made.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(made)


def test_a_folder_whose_permissions_deny_reading_is_unavailable(open_root: Path) -> None:
    readable, locked = make_folder(open_root, "readable"), make_folder(open_root, "locked")
    (readable / "a.txt").write_text("a")
    (locked / "a.txt").write_text("a")
    readable.chmod(0o755)
    locked.chmod(0o000)
    connector = FolderConnector((open_root,))

    with reading_as_nobody():
        control = [f.name for f in connector.list_files(str(readable)).files]
        folder_code = code_of(lambda: connector.folder(str(locked)))
        list_code = code_of(lambda: connector.list_files(str(locked)))

    assert control == ["a.txt"]  # the reader can reach the root: only the mode refuses
    assert folder_code == FOLDER_UNAVAILABLE and list_code == FOLDER_UNAVAILABLE


def test_a_folder_that_turns_unreadable_while_listed_is_unavailable(open_root: Path) -> None:
    folder = make_folder(open_root)
    folder.chmod(0o755)
    for n in range(3):
        (folder / f"{n}.txt").write_text("x")
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, -1)  # so that the reader may change its mode mid-listing
    connector = FolderConnector((open_root,))
    real_listdir = os.listdir
    listed: list[str] = []

    def listdir_then_lock(path: Path) -> list[str]:
        listed.extend(real_listdir(path))
        folder.chmod(0o600)  # its names were read; now none of its entries can be looked up
        return listed

    with pytest.MonkeyPatch.context() as patch, reading_as_nobody():
        patch.setattr(os, "listdir", listdir_then_lock)
        code = code_of(lambda: connector.list_files(str(folder)))

    assert sorted(listed) == ["0.txt", "1.txt", "2.txt"] and code == FOLDER_UNAVAILABLE


def test_symlinks_count_only_while_they_stay_inside_the_root(root: Path, tmp_path: Path) -> None:
    folder, other = make_folder(root), make_folder(root, "other")
    (other / "inside.txt").write_text("inside the root")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the root")
    (folder / "inside-link.txt").symlink_to(other / "inside.txt")
    (folder / "escape.txt").symlink_to(outside)
    (folder / "escape-dir").symlink_to(tmp_path)
    (folder / "dangling.txt").symlink_to(root / "gone.txt")
    (folder / "loop").symlink_to(folder / "loop")
    connector = FolderConnector((root,))

    listed = [f.name for f in connector.list_files(str(folder)).files]

    assert listed == ["inside-link.txt"]
    assert code_of(lambda: connector.download(str(folder), "escape.txt", io.BytesIO(), 1000)) == FILE_UNAVAILABLE
    into = io.BytesIO()
    assert connector.download(str(folder), "inside-link.txt", into, 1000) == 15
    assert into.getvalue() == b"inside the root"


def test_a_folder_outside_the_roots_is_not_allowed(root: Path, tmp_path: Path) -> None:
    outside = make_folder(tmp_path, "elsewhere")
    (root / "way-out").symlink_to(outside)
    connector = FolderConnector((root,))

    for path in (str(outside), str(root / "way-out"), str(root / ".." / "elsewhere"), "papers"):
        assert code_of(lambda: connector.allowed_folder(path)) == FOLDER_NOT_ALLOWED
    assert code_of(lambda: connector.list_files(str(outside))) == FOLDER_NOT_ALLOWED
    assert connector.allowed_folder(str(root)) == root.resolve()


def test_no_roots_configured_allows_no_folder(root: Path) -> None:
    folder = make_folder(root)

    with pytest.raises(PipelineError) as caught:
        FolderConnector(()).folder(str(folder))

    assert caught.value.code == FOLDER_NOT_ALLOWED and "GNOSI_SYNC_FOLDER_ROOTS" in caught.value.message


def test_download_streams_the_bytes_and_refuses_more_than_the_limit(root: Path) -> None:
    folder = make_folder(root)
    data = os.urandom(3 * (1 << 20) + 5)  # more than one block
    (folder / "big.bin").write_bytes(data)
    connector = FolderConnector((root,))

    into = io.BytesIO()
    assert connector.download(str(folder), "big.bin", into, len(data)) == len(data)
    assert into.getvalue() == data
    assert code_of(lambda: connector.download(str(folder), "big.bin", io.BytesIO(), len(data) - 1)) == FILE_TOO_LARGE


@pytest.mark.parametrize("file_id", ["../papers/a.txt", "sub/deep.txt", "..", ".hidden", "", "missing.txt", "sub"])
def test_download_refuses_what_is_not_a_listed_file(root: Path, file_id: str) -> None:
    folder = make_folder(root)
    (folder / "a.txt").write_text("a")
    (folder / ".hidden").write_text("h")
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.txt").write_text("d")

    code = code_of(lambda: FolderConnector((root,)).download(str(folder), file_id, io.BytesIO(), 100))

    assert code == FILE_UNAVAILABLE


def test_a_page_token_of_another_making_is_refused(root: Path) -> None:
    folder = make_folder(root)

    assert code_of(lambda: FolderConnector((root,)).list_files(str(folder), "not base64!")) == FOLDER_UNAVAILABLE
