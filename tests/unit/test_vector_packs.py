"""Which packs a revision keeps and what its new pack holds (storage.vector_packs.plan): a refresh
writes what changed, and however many refreshes follow, a search reads at most ``MAX_PACKS``."""
from __future__ import annotations

from collections import Counter

from storage.vector_packs import MAX_PACKS, Summary, plan


def _pack(pack_id: str, **rows: int) -> Summary:
    return Summary(pack_id, Counter(rows))


def test_unchanged_versions_keep_their_pack_and_changed_ones_go_to_the_new_one() -> None:
    kept, fresh = plan({"a", "b", "c2"}, [_pack("p", a=500, b=400, c=100)])
    assert [pack.id for pack in kept] == ["p"] and fresh == {"c2"}


def test_a_pack_mostly_no_longer_served_is_written_again_with_the_new_versions() -> None:
    kept, fresh = plan({"a", "b2", "c2"}, [_pack("p", a=100, b=400, c=100), _pack("q", d=5)])
    assert kept == [] and fresh == {"a", "b2", "c2"}


def test_nothing_changed_writes_nothing() -> None:
    kept, fresh = plan({"a", "b"}, [_pack("p", a=1), _pack("q", b=1)])
    assert {pack.id for pack in kept} == {"p", "q"} and fresh == set()


def test_successive_refreshes_merge_the_small_packs_and_keep_the_big_one() -> None:
    packs = [_pack("base", **{f"v{n}": 1000 for n in range(100)})]
    served = {f"v{n}" for n in range(100)}
    for refresh in range(40):
        served = (served - {f"v{refresh % 100}"}) | {f"new{refresh}"}
        kept, fresh = plan(served, packs)
        assert len(kept) + bool(fresh) <= MAX_PACKS and "base" in {pack.id for pack in kept}
        written = _pack(f"r{refresh}", **{version: 10 for version in fresh})
        packs = [*kept, written]
        covered = [version for pack in packs for version in pack.rows if version in served]
        assert sorted(covered) == sorted(served)
