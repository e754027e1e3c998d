"""First run on an empty vault lays out a References table chosen by identity."""
from __future__ import annotations

from pathlib import Path

from app.config import Settings
from app.scaffold import scaffold_vault
from pipeline.catalogue import Catalogue


def test_an_empty_vault_gets_a_references_table_remembered_by_identity(tmp_path: Path) -> None:
    settings = Settings.from_env({"LOCAL_DATA": str(tmp_path / "data")})
    settings.ensure_dirs()
    table_id = scaffold_vault(settings)
    assert table_id and settings.references_table_id == table_id
    catalogue = Catalogue(settings.vault_path)
    assert [t.id for t in catalogue.tables()] == [table_id]
    assert catalogue.select(table_id).total == 0
    assert scaffold_vault(settings) is None


def test_a_vault_with_files_is_left_alone_and_the_setting_wins(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "notes.md").write_text("mine")
    settings = Settings.from_env({"LOCAL_DATA": str(tmp_path / "data"), "GNOSI_VAULT_PATH": str(vault),
                                  "GNOSI_REFERENCES_TABLE": "configured-id"})
    settings.ensure_dirs()
    assert scaffold_vault(settings) is None
    assert sorted(p.name for p in vault.iterdir()) == ["notes.md"]
    assert settings.references_table_id == "configured-id"


def test_a_copy_of_the_template_can_never_become_a_source_by_accident(tmp_path: Path) -> None:
    """Kept ``template: true``: listed as a template, with the reason. Line dropped but nothing
    filled in: no source (the placeholders are only in the prose). Filled in: a record."""
    settings = Settings.from_env({"LOCAL_DATA": str(tmp_path / "data")})
    settings.ensure_dirs()
    table_id = scaffold_vault(settings)
    assert table_id
    folder = settings.vault_path / "References"
    template = (folder / "_template.md").read_text()
    (folder / "kept-flag.md").write_text(template)
    (folder / "unfilled.md").write_text(template.replace("template: true\n", ""))
    (folder / "filled.md").write_text(
        template.replace("template: true\n", "").replace('link: ""', "link: https://example.org/an-article")
    )
    selection = Catalogue(settings.vault_path).select(table_id)
    assert [item["resource_id"] for item in selection.items] == ["References/filled.md"]
    reasons = {reason["code"]: reason["count"] for reason in selection.to_dict()["omitted_reasons"]}
    assert reasons == {"TEMPLATE": 2, "NO_SOURCE": 1}  # the scaffold's own template and the copy that kept the flag
