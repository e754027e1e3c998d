"""Query terms tokenized by FTS5 itself (storage.fts_tokens), as the posting lists are keyed."""
from __future__ import annotations

import pytest

from storage import fts_tokens
from storage.lexical_index import TOKENIZER


def test_terms_are_read_as_fts5_reads_them() -> None:
    assert fts_tokens.tokens(["Running", "Café au lait", "x_y", "\u0301"], TOKENIZER) == [
        ["run"], ["cafe", "au", "lait"], ["x", "y"], []]


def test_a_term_that_cannot_be_stored_leaves_nothing_behind_for_the_next_call() -> None:
    with pytest.raises(UnicodeEncodeError):
        fts_tokens.tokens(["kept", "\ud800"], TOKENIZER)  # a lone surrogate is no UTF-8
    assert fts_tokens.tokens(["fine"], TOKENIZER) == [["fine"]]
