"""Tests of reciprocal rank fusion."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.fusion import reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60)

    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert dict(fused) == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})


def test_ties_are_broken_by_id_whatever_the_input_order() -> None:
    assert reciprocal_rank_fusion([["y", "x"], ["x", "y"]]) == reciprocal_rank_fusion([["x", "y"], ["y", "x"]])
    assert [item for item, _ in reciprocal_rank_fusion([["y", "x"], ["x", "y"]])] == ["x", "y"]


def test_weights_scale_each_ranking() -> None:
    fused = reciprocal_rank_fusion([["keyword"], ["vector"]], weights=[1.0, 2.0])

    assert [item for item, _ in fused] == ["vector", "keyword"]
    assert reciprocal_rank_fusion([["a"], ["b"]], weights=[0.0, 1.0])[-1] == ("a", 0.0)


def test_an_id_repeated_in_one_ranking_counts_once_at_its_best_rank() -> None:
    assert reciprocal_rank_fusion([["a", "b", "a"]], k=1) == [("a", 0.5), ("b", pytest.approx(1 / 3))]


def test_empty_input_gives_empty_output() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


@pytest.mark.parametrize(
    ("rankings", "kwargs"),
    [([["a"]], {"k": 0}), ([["a"], ["b"]], {"weights": [1.0]}), ([["a"]], {"weights": [-1.0]})],
)
def test_invalid_arguments_are_rejected(rankings: list[list[str]], kwargs: dict) -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion(rankings, **kwargs)


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), max_size=4))
def test_fusion_is_a_deterministic_ranking_of_every_id(rankings: list[list[str]]) -> None:
    fused = reciprocal_rank_fusion(rankings)

    assert {item for item, _ in fused} == {item for ranking in rankings for item in ranking}
    assert fused == sorted(fused, key=lambda pair: (-pair[1], pair[0]))
    assert fused == reciprocal_rank_fusion([list(r) for r in rankings])
