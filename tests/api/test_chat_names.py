"""A question may call a document by any of its names: the server hands the engine every name
of the cited chunk's document (the record's title, the title the file declares, the file name),
and the offline engine answers only from a chunk that mentions the names the question uses."""
from __future__ import annotations

import shutil

from support.services import CORPUS
from support_api import ask, create_notebook, index


def test_a_name_only_the_file_name_holds_reaches_the_engine(world) -> None:  # type: ignore[no-untyped-def]
    """The DMCA summary never says "Kessler"; its file is Kessler-briefing.pdf."""
    shutil.copyfile(CORPUS / "pdf" / "dmca.pdf", world.vault.root / "files" / "Kessler-briefing.pdf")
    world.vault.record("briefing", "Briefing", file="files/Kessler-briefing.pdf")
    notebook_id = create_notebook(world, ["briefing"])
    index(world, notebook_id, {"briefing": "Kessler-briefing.pdf"})

    named = ask(world, notebook_id, "Which president signed the DMCA into law, in the Kessler briefing?")
    unnamed = ask(world, notebook_id, "Which president signed the DMCA into law, in the Morgan briefing?")

    assert named["status"] == "answered", named
    assert "President Clinton" in named["citations"][0]["quote"]
    assert unnamed["status"] == "no_evidence"
