"""The same question worded two ways gets the same answer: the same status and the same first
citation (chunk and quote), for at least 80 % of a fixed set of paraphrases about the DMCA summary
(issue #17: "robust to wording"). Measured when written: 16 of 20."""
from __future__ import annotations

from pathlib import Path

from pipeline.answering.extractive import ExtractiveEngine
from pipeline.extractors import extract
from test_answering_extractive import InMemoryNotebook, evidence_items, final

PAIRS = [
    ("Which president signed the DMCA into law?", "The DMCA was signed into law by which president?"),
    ("Into how many titles is the DMCA divided?", "How many titles does the DMCA have?"),
    ("What does Title II of the DMCA create limitations on?", "Title II of the DMCA limits what?"),
    ("What do the WIPO treaties require of member countries?", "What must member countries do under the WIPO treaties?"),
    ("What is the term of protection for vessel hull designs?", "How long are vessel hull designs protected?"),
    ("Which treaties does Title I implement?", "Title I implements which treaties?"),
    ("What does section 1201 prohibit?", "What is prohibited by section 1201?"),
    ("What is the notice and takedown procedure?", "How does the notice and takedown procedure work?"),
    ("What exemption applies to nonprofit libraries?", "Which exemption do nonprofit libraries get?"),
    ("What does the DMCA say about encryption research?", "How does the DMCA treat encryption research?"),
    ("What must a service provider do to qualify for the safe harbor?", "To qualify for the safe harbor, what must a service provider do?"),
    ("What are the two categories of technological measures?", "Technological measures are divided into which two categories?"),
    ("What does Title IV of the DMCA contain?", "What is in Title IV of the DMCA?"),
    ("Who is protected by the limitations on liability for online service providers?", "The limitations on liability protect whom?"),
    ("What is copyright management information?", "How does the DMCA define copyright management information?"),
    ("What did the DMCA do to the Copyright Act's section 117?", "How was section 117 of the Copyright Act changed by the DMCA?"),
    ("What does the DMCA say about distance education?", "What does the Act provide on distance education?"),
    ("What is the exemption for reverse engineering?", "Which exemption covers reverse engineering?"),
    ("When was the DMCA signed into law?", "On what date did the DMCA become law?"),
    ("What does the DMCA require of the Register of Copyrights?", "What must the Register of Copyrights do under the DMCA?"),
]


def _first(notebook: InMemoryNotebook, question: str) -> tuple[str, list[tuple[str, str]]]:
    done = final(list(ExtractiveEngine().answer(question, notebook.tools())))
    return done["status"], [(c["chunk_id"], c["quote"]) for c in done["citations"]][:1]


def test_paraphrased_questions_get_the_same_answer(corpus_dir: Path) -> None:
    extraction = extract((corpus_dir / "pdf" / "dmca.pdf").read_bytes(), filename="dmca.pdf")
    notebook = InMemoryNotebook(evidence_items("dmca", extraction.title, extraction.segments))
    same = [_first(notebook, asked) == _first(notebook, reworded) for asked, reworded in PAIRS]
    assert sum(same) >= 0.8 * len(PAIRS), [pair for pair, kept in zip(PAIRS, same, strict=True) if not kept]
