"""What a started instance leaves on disk is private to its account, and the first-run admin token
never lands in a log others can read (issue #11, item 12)."""
from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from support.live import GNOSI
from support.services import REPO, free_port, service_env, stop, wait_for_port
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_start_writes_the_admin_token_to_a_private_file_and_keeps_state_private(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="DMCA summary")
    local_data = tmp_path / "local-data"
    env = {**service_env(local_data, vault.root, vault.table_id), "GNOSI_PORT": str(free_port())}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([GNOSI, "serve"], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(int(env["GNOSI_PORT"]), timeout=60, process=process)
        system = local_data / "system"
        token_file = system / "first-run-admin-token"
        token = token_file.read_text().strip()
        assert token.startswith("gn_") and token not in log.read_text()
        assert str(token_file) in log.read_text()
        session = httpx.get(  # the port opens before the web worker has loaded the app (seconds here)
            f"http://127.0.0.1:{env['GNOSI_PORT']}/api/session", headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert session.status_code == 200 and session.json()["user"]["role"] == "admin"
        assert _mode(system) == 0o700
        for name in ("notebooks.sqlite3", "broker.sqlite3", "first-run-admin-token", "internal-token", "session-key"):
            assert _mode(system / name) == 0o600, name
    finally:
        stop(process)
