"""What a block edit and a tree may hold (review findings: multi-line blocks were refused to a
person but control characters accepted from the agent; an unhashable parent was a 500)."""
from __future__ import annotations

import pytest

from pipeline.knowledge.edit import MAX_BLOCK_CHARS, block_text_problem
from pipeline.knowledge.trees import TreeError, checked_nodes


def test_a_block_may_hold_lines_and_tabs_but_no_other_control_or_bidi_override() -> None:
    assert block_text_problem("- first item\n- second item\n\tindented") is None
    for bad in ("", "   ", None, 12, "NUL\x00here", "bell\x07", "Trojan \u202esource", "x" * (MAX_BLOCK_CHARS + 1)):
        assert block_text_problem(bad), repr(bad)


@pytest.mark.parametrize("node", [
    {"key": "a", "parent": [], "kind": "group", "title": "A"},
    {"key": "a", "parent": {"x": 1}, "kind": "group", "title": "A"},
    {"key": "a", "parent": None, "kind": "group", "title": "A", "concept_id": 5},
    {"key": "a", "parent": None, "kind": "concept", "title": "", "concept_id": None},
])
def test_a_malformed_node_is_a_tree_error(node: dict) -> None:
    with pytest.raises(TreeError):
        checked_nodes([node])


def test_a_well_formed_tree_is_kept_in_order() -> None:
    nodes = [{"key": "g", "parent": None, "kind": "group", "title": " Law "},
             {"key": "c", "parent": "g", "kind": "concept", "concept_id": "c1"}]
    assert checked_nodes(nodes) == [{"key": "g", "parent": None, "kind": "group", "title": "Law", "concept_id": None},
                                    {"key": "c", "parent": "g", "kind": "concept", "title": "", "concept_id": "c1"}]
