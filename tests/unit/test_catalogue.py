"""Tests of the vault catalogue: tables by identity, records, sources, containment, cache.

Every vault is built in ``tmp_path`` by the helpers below, so each test states its own data.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.catalogue import (
    AttachmentResolver,
    Catalogue,
    Record,
    find_table,
    list_tables,
    load_records,
    read_records,
    record_sources,
    resolve_attachment,
)
from pipeline.catalogue import cache as cache_module
from pipeline.types import PipelineError, SourceRef

REFERENCES_ID = "7f1c0e9e-0b7a-4a53-9a57-3e5f2d1c9b10"
REFERENCES_FIELDS = {
    "title": "text",
    "file": "attachment",
    "extra": "file",
    "link": "url",
    "authors": "author",
    "tags": "tags",
    "kind": "type",
    "year": "text",
}


def write_table(vault: Path, folder: str, table_id: str, name: str, fields: dict[str, str]) -> Path:
    """Create ``vault/folder/_table.yaml`` and return the folder."""
    path = vault / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "_table.yaml").write_text(yaml.safe_dump({"id": table_id, "name": name, "fields": fields}, sort_keys=False))
    return path


def write_record(folder: Path, name: str, front: dict[str, Any] | None, body: str = "Body text.\n") -> Path:
    """Create a record file; ``front=None`` writes a body-only note."""
    head = "" if front is None else "---\n" + yaml.safe_dump(front, allow_unicode=True) + "---\n"
    path = folder / name
    path.write_text(head + body, encoding="utf-8")
    return path


def build_references_vault(vault: Path) -> Path:
    """A vault whose References table lives in a folder called 'Library' and is named 'Papers'.

    A decoy table in a folder called 'References' proves selection by identity.
    """
    (vault / "papers").mkdir(parents=True)
    (vault / "papers" / "elan.pdf").write_bytes(b"%PDF-1.4 elan")
    (vault / "papers" / "zebra.pdf").write_bytes(b"%PDF-1.4 zebra")
    decoy = write_table(vault, "References", "decoy-table", "References", {"title": "text", "file": "attachment"})
    write_record(decoy, "decoy.md", {"title": "Decoy", "file": "papers/elan.pdf"})
    lib = write_table(vault, "Library", REFERENCES_ID, "Papers", REFERENCES_FIELDS)
    write_record(lib, "elan.md", {"title": "Élan", "file": "papers/elan.pdf", "authors": ["Ana", "Bo"],
                                  "tags": ["ml", "nlp"], "kind": "paper", "year": 2021})
    write_record(lib, "eclair.md", {"id": "res-eclair", "title": "eclair", "link": "https://example.org/eclair",
                                    "authors": "Bo", "tags": ["ml"], "kind": "web"})
    write_record(lib, "zebra.md", {"title": "Zebra",
                                   "file": ["papers/zebra.pdf", "papers/elan.pdf", "papers/zebra.pdf"],
                                   "extra": "papers/zebra.pdf", "link": ["https://example.org/z", "ftp://example.org/z"],
                                   "kind": "paper", "tags": ["zoo"]})
    write_record(lib, "abaco.md", {"title": "Ábaco", "link": "http://example.com/abaco", "kind": "book",
                                   "authors": "Ana"})
    write_record(lib, "template.md", {"title": "Aardvark template", "template": True, "file": "papers/elan.pdf"})
    write_record(lib, "body-only.md", None, "Just a body with https://example.org/in-body\n")
    write_record(lib, "private-url.md", {"title": "Private", "link": "http://10.0.0.1/x", "tags": ["secret"]})
    write_record(lib, "escape.md", {"title": "Escape", "file": "../../etc/passwd"})
    write_record(lib, "absolute.md", {"title": "Absolute", "file": "/etc/passwd"})
    write_record(lib, "metadata-only.md", {"title": "Metadata only", "authors": "Ana", "tags": ["ml"],
                                           "kind": "paper", "year": "https://example.org/not-a-url-field"})
    (lib / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    (lib / "not-mapping.md").write_text("---\n- a\n- b\n---\n", encoding="utf-8")
    (lib / "unclosed.md").write_text("---\ntitle: never closed\n", encoding="utf-8")
    (lib / "notes.txt").write_text("not a record")
    return lib


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    build_references_vault(tmp_path)
    return tmp_path


def by_path(records: list[Record], name: str) -> Record:
    return next(record for record in records if record.rel_path == f"Library/{name}")


# --- tables -------------------------------------------------------------------------------

def test_tables_are_found_by_identity_not_by_folder_or_name(vault: Path) -> None:
    assert {(t.id, t.folder.name, t.name) for t in list_tables(vault)} == {
        ("decoy-table", "References", "References"),
        (REFERENCES_ID, "Library", "Papers"),
    }
    table = find_table(vault, REFERENCES_ID)
    assert table.folder == vault / "Library"
    assert table.fields["extra"] == "attachment"  # the 'file' alias is folded
    with pytest.raises(PipelineError) as error:
        find_table(vault, "References")
    assert error.value.code == "TABLE_NOT_FOUND"


def test_broken_hidden_and_duplicate_tables(vault: Path) -> None:
    (vault / "Broken").mkdir()
    (vault / "Broken" / "_table.yaml").write_text("id: [unclosed\n")
    write_table(vault, ".hidden", "hidden-table", "Hidden", {"title": "text"})
    write_table(vault, "NoId", "", "No id", {"title": "text"})
    assert {t.id for t in list_tables(vault)} == {"decoy-table", REFERENCES_ID}
    write_table(vault, "Copy", REFERENCES_ID, "Copy", {"title": "text"})
    with pytest.raises(PipelineError) as error:
        find_table(vault, REFERENCES_ID)
    assert error.value.code == "TABLE_AMBIGUOUS"


def test_missing_vault_is_a_pipeline_error(tmp_path: Path) -> None:
    with pytest.raises(PipelineError) as error:
        list_tables(tmp_path / "absent")
    assert error.value.code == "VAULT_UNREADABLE"


def test_symlinked_table_folder_outside_the_vault_is_ignored(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_table(outside, "Secret", "secret-table", "Secret", {"title": "text"})
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Linked").symlink_to(outside / "Secret", target_is_directory=True)
    assert list_tables(vault) == []


# --- records ------------------------------------------------------------------------------

def test_records_ids_titles_templates_and_skips(vault: Path) -> None:
    table = find_table(vault, REFERENCES_ID)
    loaded = read_records(vault, table)
    names = [record.rel_path.split("/")[1] for record in loaded.records]
    assert names == sorted(names)
    assert "notes.txt" not in names and "_table.yaml" not in names
    assert {item.rel_path: item.reason for item in loaded.skipped} == {
        "Library/broken.md": "front matter is not valid YAML: ParserError",
        "Library/not-mapping.md": "front matter is not a mapping",
        "Library/unclosed.md": "front matter is not closed",
    }
    eclair = by_path(loaded.records, "eclair.md")
    assert (eclair.resource_id, eclair.title) == ("res-eclair", "eclair")
    elan = by_path(loaded.records, "elan.md")
    assert (elan.resource_id, elan.title, elan.is_template) == ("Library/elan.md", "Élan", False)
    body_only = by_path(loaded.records, "body-only.md")
    assert (body_only.title, body_only.values) == ("body-only", {})
    assert by_path(loaded.records, "template.md").is_template
    assert load_records(vault, table) == loaded.records


def test_title_falls_back_to_first_text_field_then_stem(tmp_path: Path) -> None:
    folder = write_table(tmp_path, "T", "t", "T", {"link": "url", "headline": "text", "note": "text"})
    write_record(folder, "a.md", {"headline": "Headline", "note": "n"})
    write_record(folder, "b.md", {"note": "only note"})
    write_record(folder, "c.md", {"headline": 1984})
    titles = [record.title for record in load_records(tmp_path, find_table(tmp_path, "t"))]
    assert titles == ["Headline", "b", "1984"]


def test_bom_crlf_and_duplicate_ids(tmp_path: Path) -> None:
    folder = write_table(tmp_path, "T", "t", "T", {"title": "text"})
    (folder / "a.md").write_bytes("\ufeff---\r\nid: same\r\ntitle: Première\r\n---\r\nbody".encode())
    write_record(folder, "b.md", {"id": "same", "title": "Second"})
    loaded = read_records(tmp_path, find_table(tmp_path, "t"))
    assert [(r.resource_id, r.title) for r in loaded.records] == [("same", "Première")]
    assert loaded.skipped[0].rel_path == "T/b.md"
    assert "duplicate id" in loaded.skipped[0].reason


def test_unreadable_and_oversized_files_are_skipped(tmp_path: Path) -> None:
    folder = write_table(tmp_path, "T", "t", "T", {"title": "text"})
    write_record(folder, "ok.md", {"title": "ok"})
    (folder / "huge.md").write_text("---\n" + "x: " + "y" * 300_000 + "\n---\n")
    (folder / "latin1.md").write_bytes("---\ntitle: caf\xe9\n---\n".encode("latin-1"))
    (folder / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    unreadable = write_record(folder, "locked.md", {"title": "locked"})
    unreadable.chmod(0)
    try:
        loaded = read_records(tmp_path, find_table(tmp_path, "t"))
    finally:
        unreadable.chmod(0o644)
    assert [r.title for r in loaded.records] == (["ok"] if os.geteuid() else ["locked", "ok"])
    reasons = {item.rel_path: item.reason for item in loaded.skipped}
    assert reasons["T/huge.md"] == "front matter is too large"
    assert reasons["T/latin1.md"].startswith("front matter is not valid YAML")
    assert "T/dangling.md" not in reasons  # a broken link is not a record file at all
    if os.geteuid():
        assert reasons["T/locked.md"].startswith("unreadable")


def test_record_file_symlinked_from_outside_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("---\ntitle: secret\nfile: x.pdf\n---\n")
    vault = tmp_path / "vault"
    folder = write_table(vault, "T", "t", "T", {"title": "text", "file": "attachment"})
    (folder / "leak.md").symlink_to(tmp_path / "secret.md")
    loaded = read_records(vault, find_table(vault, "t"))
    assert loaded.records == []
    assert [(s.rel_path, s.reason) for s in loaded.skipped] == [("T/leak.md", "symlink leaves the vault")]


# --- sources ------------------------------------------------------------------------------

def test_only_attachment_and_url_values_are_sources(vault: Path) -> None:
    table = find_table(vault, REFERENCES_ID)
    records = load_records(vault, table)
    zebra = by_path(records, "zebra.md")
    assert record_sources(zebra, table) == [
        SourceRef("Library/zebra.md", "file", "attachment", "papers/zebra.pdf"),
        SourceRef("Library/zebra.md", "file", "attachment", "papers/elan.pdf"),
        SourceRef("Library/zebra.md", "link", "url", "https://example.org/z"),
    ]
    for name in ("body-only.md", "private-url.md", "escape.md", "absolute.md", "metadata-only.md"):
        assert record_sources(by_path(records, name), table) == [], name
    every_value = {s.value for r in records for s in record_sources(r, table)}
    assert every_value == {"papers/elan.pdf", "papers/zebra.pdf", "https://example.org/z",
                           "https://example.org/eclair", "http://example.com/abaco"}


def test_private_url_is_usable_only_through_the_allowlist(vault: Path) -> None:
    table = find_table(vault, REFERENCES_ID)
    private = by_path(load_records(vault, table), "private-url.md")
    assert record_sources(private, table, allowlist=["10.0.0.0/8"]) == [
        SourceRef("Library/private-url.md", "link", "url", "http://10.0.0.1/x")
    ]


@pytest.mark.parametrize("value", ["file:///etc/passwd", "javascript:alert(1)", "http://localhost/x",
                                   "http://127.0.0.1/x", "http://169.254.169.254/latest", "https://user:pw@example.org/"])
def test_non_public_or_non_http_urls_are_not_sources(tmp_path: Path, value: str) -> None:
    folder = write_table(tmp_path, "T", "t", "T", {"title": "text", "link": "url"})
    write_record(folder, "r.md", {"title": "r", "link": [value, 42, None, "  "]})
    table = find_table(tmp_path, "t")
    assert record_sources(load_records(tmp_path, table)[0], table) == []


# --- attachment containment ---------------------------------------------------------------

def test_resolve_attachment_inside_the_vault(vault: Path) -> None:
    assert resolve_attachment(vault, "papers/elan.pdf") == (vault / "papers" / "elan.pdf").resolve()
    assert resolve_attachment(vault, "papers/../papers/zebra.pdf").name == "zebra.pdf"


@pytest.mark.parametrize("value", ["../../etc/passwd", "/etc/passwd", "..", "papers/../../x",
                                   "..\\..\\etc\\passwd", "C:/Windows/win.ini", "a\x00b", ""])
def test_resolve_attachment_refuses_escapes(vault: Path, value: str) -> None:
    with pytest.raises(PipelineError) as error:
        resolve_attachment(vault, value)
    assert error.value.code == "PATH_OUTSIDE_VAULT"


def test_resolve_attachment_refuses_symlinks_leaving_the_vault(tmp_path: Path) -> None:
    (tmp_path / "secret.pdf").write_bytes(b"secret")
    vault = tmp_path / "vault"
    (vault / "papers").mkdir(parents=True)
    (vault / "papers" / "inside.pdf").write_bytes(b"inside")
    (vault / "papers" / "leak.pdf").symlink_to(tmp_path / "secret.pdf")
    (vault / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    (vault / "papers" / "alias.pdf").symlink_to(vault / "papers" / "inside.pdf")
    # A link to a missing outside file says "outside" too: "missing" would tell whoever plants
    # links which outside paths exist.
    (vault / "papers" / "probe.pdf").symlink_to(tmp_path / "no-such-file.pdf")
    for value in ("papers/leak.pdf", "linkdir/secret.pdf", "papers/probe.pdf", "linkdir/no-such-file.pdf"):
        with pytest.raises(PipelineError) as error:
            resolve_attachment(vault, value)
        assert error.value.code == "PATH_OUTSIDE_VAULT", value
    assert resolve_attachment(vault, "papers/alias.pdf") == (vault / "papers" / "inside.pdf").resolve()


def test_one_resolver_follows_links_inside_the_vault_and_refuses_links_out(tmp_path: Path) -> None:
    """The files of a folder reached through a link resolve as ``os.path.realpath`` says, and a
    link among them, or a folder link out of the vault, is refused however many files of the
    folder the resolver resolved before."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.pdf").write_bytes(b"secret")
    vault = tmp_path / "vault"
    (vault / "real").mkdir(parents=True)
    for name in ("a.pdf", "b.pdf"):
        (vault / "real" / name).write_bytes(b"inside")
    (vault / "alias").symlink_to(vault / "real", target_is_directory=True)
    (vault / "real" / "leak.pdf").symlink_to(tmp_path / "outside" / "secret.pdf")
    (vault / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    resolver = AttachmentResolver(vault)
    for value in ("alias/a.pdf", "real/b.pdf", "alias/b.pdf", "real/../alias/a.pdf"):
        assert str(resolver.resolve(value)) == os.path.realpath(vault / value), value
    for value in ("alias/leak.pdf", "real/leak.pdf", "out/secret.pdf"):
        with pytest.raises(PipelineError) as error:
            resolver.resolve(value)
        assert error.value.code == "PATH_OUTSIDE_VAULT", value


@pytest.mark.parametrize("moved", [False, True], ids=["another folder linked", "the folder itself moved out"])
def test_a_folder_replaced_by_a_link_out_after_a_resolver_saw_it_is_refused(tmp_path: Path, moved: bool) -> None:
    """The resolver has resolved a file of ``docs``; then ``docs`` becomes a link out of the vault,
    to another folder or to the same one moved out (same device and inode). Its next file must be
    refused as a fresh resolver refuses it, not read through the link."""
    vault = tmp_path / "vault"
    (vault / "docs").mkdir(parents=True)
    (vault / "docs" / "a.pdf").write_bytes(b"inside")
    resolver = AttachmentResolver(vault)
    assert resolver.resolve("docs/a.pdf") == (vault / "docs" / "a.pdf").resolve()
    outside = tmp_path / "outside"
    if moved:
        (vault / "docs").rename(outside)
    else:
        (vault / "docs").rename(vault / "docs-before")
        outside.mkdir()
    (outside / "b.pdf").write_bytes(b"secret")
    (vault / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PipelineError) as error:
        resolver.resolve("docs/b.pdf")
    assert error.value.code == "PATH_OUTSIDE_VAULT"


def test_resolve_attachment_missing_directory_and_loop(tmp_path: Path) -> None:
    (tmp_path / "papers").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for value in ("papers/absent.pdf", "papers", "loop", "\ud800.pdf"):  # a name no file system encodes
        with pytest.raises(PipelineError) as error:
            resolve_attachment(tmp_path, value)
        assert error.value.code == "ATTACHMENT_MISSING", value


# --- selector and validation on a real vault ----------------------------------------------

def test_selector_over_the_vault(vault: Path) -> None:
    selection = Catalogue(vault).select(REFERENCES_ID)
    assert [item["title"] for item in selection.items] == ["Ábaco", "eclair", "Élan", "Zebra"]
    assert selection.total == 4
    # body-only, private URL, ../ escape, absolute path, metadata only, and the template: each says why.
    assert selection.omitted == 6
    assert {reason["code"]: reason["count"] for reason in selection.omitted_reasons} == {
        "TEMPLATE": 1, "URL_NOT_ALLOWED": 1, "PATH_NOT_ALLOWED": 2, "NO_SOURCE": 2,
    }
    zebra = selection.items[3]
    assert zebra == {"resource_id": "Library/zebra.md", "title": "Zebra", "type": "paper", "authors": [],
                     "tags": ["zoo"], "source_count": 3, "kinds": ["attachment", "url"]}
    assert selection.facets["type"] == [{"value": "paper", "count": 2}, {"value": "book", "count": 1},
                                        {"value": "web", "count": 1}]
    assert selection.facets["author"] == [{"value": "Ana", "count": 2}, {"value": "Bo", "count": 2}]
    assert {f["value"] for f in selection.facets["tag"]} == {"ml", "nlp", "zoo"}  # never "secret"
    assert Catalogue(vault).select("decoy-table").total == 1


def test_validate_ids_over_the_vault(vault: Path) -> None:
    catalogue = Catalogue(vault)
    chosen = catalogue.validate(REFERENCES_ID, ["res-eclair", "Library/elan.md", "res-eclair"])
    assert list(chosen) == ["res-eclair", "Library/elan.md"]
    cases = {
        "RESOURCE_NOT_FOUND": ["res-eclair", "nope", "Library/decoy.md"],
        "RESOURCE_IS_TEMPLATE": ["Library/template.md"],
        "RESOURCE_HAS_NO_SOURCES": ["Library/escape.md", "Library/private-url.md", "res-eclair"],
    }
    for code, ids in cases.items():
        with pytest.raises(PipelineError) as error:
            catalogue.validate(REFERENCES_ID, ids)
        assert error.value.code == code
        assert "res-eclair" not in error.value.message
    with pytest.raises(PipelineError) as error:
        catalogue.validate(REFERENCES_ID, ["Library/escape.md"] * 1001)
    assert error.value.code == "TOO_MANY_RESOURCES"


# --- the cache and a large vault ----------------------------------------------------------

def test_catalogue_reparses_only_changed_files(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.catalogue.cache as cache

    catalogue = Catalogue(vault)
    table = catalogue.table(REFERENCES_ID)
    first = catalogue.records(table)
    parsed: list[str] = []
    real_parse = cache.parse_record_file
    monkeypatch.setattr(cache, "parse_record_file", lambda *a: parsed.append(a[-1].name) or real_parse(*a))
    assert catalogue.records(table) == first and parsed == []
    record = vault / "Library" / "zebra.md"
    write_record(vault / "Library", "zebra.md", {"title": "Zebra renamed", "file": "papers/zebra.pdf"})
    os.utime(record, ns=(time.time_ns(), time.time_ns() + 10**9))
    write_record(vault / "Library", "new.md", {"title": "New", "file": "papers/elan.pdf"})
    (vault / "Library" / "eclair.md").unlink()
    titles = {r.title for r in catalogue.records(table)}
    assert sorted(parsed) == ["new.md", "zebra.md"]
    assert "Zebra renamed" in titles and "New" in titles and "eclair" not in titles


def test_five_thousand_records_are_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A later listing re-parses only the record files that changed (none here): what keeps the
    selector fast on a big table, checked by counting parses, not by the clock."""
    folder = write_table(tmp_path, "Refs", "big", "Refs", {"title": "text", "file": "attachment", "link": "url",
                                                           "authors": "author", "tags": "tags", "kind": "type"})
    for n in range(5000):
        front = {"title": f"Título {n:04d}", "authors": [f"Author {n % 37}"], "tags": [f"t{n % 11}", "all"],
                 "kind": ["paper", "book", "web"][n % 3]}
        front["file" if n % 2 else "link"] = f"papers/{n}.pdf" if n % 2 else f"https://example.org/{n}"
        (folder / f"r{n:04d}.md").write_text("---\n" + yaml.safe_dump(front, allow_unicode=True) + "---\nbody\n")
    parsed: list[Path] = []
    real_parse = cache_module.parse_record_file

    def counting_parse(vault_real: Path, vault: Path, table, path: Path):  # type: ignore[no-untyped-def]
        parsed.append(path)
        return real_parse(vault_real, vault, table, path)

    monkeypatch.setattr(cache_module, "parse_record_file", counting_parse)
    catalogue = Catalogue(tmp_path)
    cold = catalogue.select("big", q="tit", per_page=200)
    assert len(parsed) == 5000
    warm = catalogue.select("big", q="tit", page=3, per_page=200, tag="all")
    assert len(parsed) == 5000, "nothing changed: nothing parsed again"
    assert cold.total == warm.total == 5000
    assert warm.items[0]["title"] == "Título 0400"
