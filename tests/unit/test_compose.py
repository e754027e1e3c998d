"""compose.yaml is a valid Compose file and describes the topology the README documents."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from app.serve import role_of

REPO = Path(__file__).resolve().parents[2]
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def _services() -> dict[str, Any]:
    return yaml.safe_load((REPO / "compose.yaml").read_text())["services"]


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    """check-jsonschema ships the Compose specification's JSON schema (Docker is not needed)."""
    result = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(REPO / "compose.yaml")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_only_the_database_hosts_services_hold_the_data_volume() -> None:
    mounted = {name for name, service in _services().items()
               if any(str(volume).startswith("gnosi-data:") for volume in service.get("volumes", []))}
    assert mounted == {"web", "coordinator", "analysis"}


def test_analyses_run_apart_from_the_sweeper() -> None:
    """A model step may take minutes: on the coordinator's one process it would hold up the
    sweeper, whose heartbeat /readyz checks."""
    services = _services()
    assert services["coordinator"]["command"][2:4] == ["-Q", "coordinator"]
    assert services["analysis"]["command"][2:4] == ["-Q", "analysis"]


def test_one_beat_and_web_is_healthy_only_when_ready() -> None:
    services = _services()
    assert [name for name, service in services.items() if "--beat" in service["command"]] == ["coordinator"]
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["extract"]["depends_on"]["web"] == {"condition": "service_healthy"}
    assert services["extract"]["command"][-4:] == ["-Q", "extract,chunk", "-c", "1"]
    assert "FLOWER_BASIC_AUTH" in services["flower"]["environment"]


def test_every_service_has_a_healthcheck_and_each_worker_pings_its_own_role() -> None:
    """A worker's node is named `<role>-<pid>@<host>` after the queues it serves (app.serve.role_of):
    the healthcheck must ask for that role, or a healthy worker reads as unhealthy."""
    services = _services()
    assert all("healthcheck" in service for service in services.values()), services
    workers = {name: service for name, service in services.items() if service.get("command", [])[1:2] == ["worker"]}
    assert set(workers) == {"coordinator", "analysis", "extract"}
    for service in workers.values():
        queues = service["command"][service["command"].index("-Q") + 1]
        assert service["healthcheck"]["test"] == ["CMD", "gnosi", "worker-ping", role_of(queues)]
    assert "127.0.0.1:5555/healthcheck" in " ".join(services["flower"]["healthcheck"]["test"])
