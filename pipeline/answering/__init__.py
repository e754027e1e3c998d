"""Grounded answering: read-only notebook tools, answer engines and citation validation.

Pure domain code: the server builds a ``ToolRegistry`` per turn (``notebook_tools``), picks an
engine (``ExtractiveEngine`` by default, ``OpenAICompatibleEngine`` when a model is configured),
and forwards the engine's ``AnswerEvent`` stream to the client.
"""
from pipeline.answering.citations import CitedText, extract_markers, locate_quote, validated_citations
from pipeline.answering.extractive import NO_EVIDENCE_TEXT, ExtractiveEngine, ExtractiveSettings
from pipeline.answering.llm import OpenAICompatibleEngine
from pipeline.answering.tools import INSPECT_SOURCES, READ_EVIDENCE, SEARCH_NOTEBOOK, notebook_tools
from pipeline.answering.types import AnswerEngine, AnswerEvent, EvidenceItem, ToolRegistry, ToolSpec

__all__ = [
    "INSPECT_SOURCES",
    "NO_EVIDENCE_TEXT",
    "READ_EVIDENCE",
    "SEARCH_NOTEBOOK",
    "AnswerEngine",
    "AnswerEvent",
    "CitedText",
    "EvidenceItem",
    "ExtractiveEngine",
    "ExtractiveSettings",
    "OpenAICompatibleEngine",
    "ToolRegistry",
    "ToolSpec",
    "extract_markers",
    "locate_quote",
    "notebook_tools",
    "validated_citations",
]
