"""The test suite's own layout: test folders are not packages, so pytest imports each test module
by its file name, and two files of one name in different folders stop the run at collection."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_name_of_its_own() -> None:
    found: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        found[path.name].append(str(path.relative_to(TESTS)))
    assert not {name: paths for name, paths in found.items() if len(paths) > 1}
