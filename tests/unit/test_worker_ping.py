"""`gnosi worker-ping` on the embedded broker: kombu's SQL transport carries no broadcasts, so a
ping could only time out; it says where to look instead."""
from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

from click.testing import CliRunner

from app.cli import main
from tasks.liveness import node_pattern


def test_the_embedded_broker_is_refused_with_a_pointer_to_readyz(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["worker-ping", "extract"], env={"LOCAL_DATA": str(tmp_path), "CELERY_BROKER_URL": ""})
    assert result.exit_code == 1 and "/readyz" in result.output


def test_the_pattern_matches_only_this_hosts_workers_of_the_role() -> None:
    """kombu's "glob" matcher is fnmatch."""
    pattern = node_pattern("extract", "box-1")
    assert fnmatch("extract-41@box-1", pattern)
    assert not fnmatch("extract-41@box-12", pattern) and not fnmatch("coordinator-7@box-1", pattern)
