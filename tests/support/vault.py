"""Build a throwaway vault of References records around real corpus files."""
from __future__ import annotations

import io
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

import pypdfium2
import yaml

from app.scaffold import SCHEMA_FIELDS
from support.services import CORPUS


def pdf_pages(pdf: Path, pages: Sequence[int]) -> bytes:
    """A PDF of only ``pages`` (0-based) of ``pdf``, copied as they are (PDFium imports the page
    objects, text layer and all)."""
    original = pypdfium2.PdfDocument(pdf)
    part = pypdfium2.PdfDocument.new()
    try:
        part.import_pages(original, list(pages))
        out = io.BytesIO()
        part.save(out)
        return out.getvalue()
    finally:
        part.close()
        original.close()


class VaultBuilder:
    def __init__(self, root: Path, table_folder: str = "References") -> None:
        self.root = root
        self.table_id = str(uuid.uuid4())
        self.folder = root / table_folder
        self.folder.mkdir(parents=True)
        (root / "files").mkdir()
        (self.folder / "_table.yaml").write_text(
            yaml.safe_dump({"id": self.table_id, "name": "References", "fields": SCHEMA_FIELDS})
        )

    def record(self, resource_id: str, title: str, **values: object) -> str:
        front = {"id": resource_id, "title": title, **values}
        text = "---\n" + yaml.safe_dump(front, allow_unicode=True) + "---\nThe body is never evidence.\n"
        (self.folder / f"{resource_id}.md").write_text(text, encoding="utf-8")
        return resource_id

    def attach_corpus(self, corpus_relpath: str) -> str:
        """Copy a corpus file into the vault (a symlink out of the vault would be refused)."""
        source = CORPUS / corpus_relpath
        target = self.root / "files" / source.name
        shutil.copyfile(source, target)
        return f"files/{source.name}"

    def pdf_record(self, resource_id: str, corpus_pdf: str, title: str | None = None) -> str:
        return self.record(resource_id, title or corpus_pdf, file=self.attach_corpus(f"pdf/{corpus_pdf}"))

    def pdf_pages_record(self, resource_id: str, corpus_pdf: str, pages: Sequence[int], title: str | None = None) -> str:
        """A record whose file holds only ``pages`` (0-based) of a corpus PDF: two parts of one
        real document are two sources on one subject."""
        name = f"{Path(corpus_pdf).stem}-p{pages[0] + 1}-{pages[-1] + 1}.pdf"
        (self.root / "files" / name).write_bytes(pdf_pages(CORPUS / "pdf" / corpus_pdf, pages))
        return self.record(resource_id, title or name, file=f"files/{name}")
