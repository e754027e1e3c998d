"""What a sync of an unchanged linked folder costs, per connector: it must download nothing.

Usage: .venv/bin/python bench/folder_sync.py [--files 1000] [--rounds 5]

Builds an instance (real migrated SQLite database, the real API for the notebook and the link)
with a folder of ``--files`` small text files under GNOSI_SYNC_FOLDER_ROOTS and the same number in
a Google Drive folder of the local fake Drive (tests/support/fake_drive.py: Drive v3's pages of
100, its token endpoint). The first sync downloads every file; each later round, timed, finds
every file unchanged. Rounds alternate between the connectors (interleaved, so drift on a shared
machine hits both alike); the table gives the median, min and max, and the downloads the timed
rounds made (0 is the requirement). The notebook's ingestion is not part of a sync round (it is
the job the round asks for when something changed), so no worker runs here.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.services.folder_sync import sync_folder  # noqa: E402
from storage import accounts  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from support.fake_drive import FakeDrive  # noqa: E402
from support.services import service_env  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402


def build(tmp: Path, drive: FakeDrive, files: int) -> tuple[object, dict[str, str]]:
    """The app, and the linked folder id of each connector."""
    local = tmp / "drives" / "team"
    local.mkdir(parents=True)
    drive_folder = drive.add_folder("Team")
    for index in range(files):
        text = f"Report {index}: the depot shipped {index * 7} crates.\n"
        (local / f"report-{index:04d}.txt").write_text(text)
        drive.add_file(drive_folder, f"report-{index:04d}.txt", text.encode(), "text/plain")
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    env = service_env(tmp / "local-data", vault.root, vault.table_id, broker_url="memory://")
    env.update(
        GNOSI_SYNC_FOLDER_ROOTS=str(local.parent), GNOSI_DRIVE_API_URL=drive.url, GNOSI_DRIVE_TOKEN_URL=drive.token_url,
    )
    settings = Settings.from_env(env)
    settings.ensure_dirs()
    upgrade(settings.database_path)
    app = create_app(settings)
    with app.extensions["gnosi"].db.session() as session:
        token = accounts.add_user(session, settings.vault_hash, "bench", "lab", "editor")[1]
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    notebook_id = client.post("/api/notebooks", json={"title": "Bench", "resource_ids": ["dmca"]}, headers=headers).json["id"]
    client.put("/api/drive/authorization", headers=headers, json={
        "client_id": drive.client_id, "client_secret": drive.client_secret, "refresh_token": drive.issue_refresh_token(),
    })
    links = {}
    for connector, folder in (("folder", str(local)), ("google-drive", drive_folder)):
        answer = client.post(
            f"/api/notebooks/{notebook_id}/linked-folders", headers=headers, json={"connector": connector, "folder": folder}
        )
        links[connector] = answer.json["id"]
    return app, links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        drive = stack.enter_context(FakeDrive())
        app, links = build(tmp, drive, args.files)
        svc = app.extensions["gnosi"]  # type: ignore[attr-defined]
        with app.app_context():  # type: ignore[attr-defined]
            first = {name: sync_folder(svc, folder_id).counts["downloaded"] for name, folder_id in links.items()}
            downloads_before = drive.media_requests()
            blobs_before = sum(1 for _ in (tmp / "local-data" / "blobs").rglob("*"))
            seconds: dict[str, list[float]] = {name: [] for name in links}
            unchanged: dict[str, int] = {}
            for _ in range(args.rounds):
                for name, folder_id in links.items():
                    started = time.perf_counter()
                    outcome = sync_folder(svc, folder_id)
                    seconds[name].append(time.perf_counter() - started)
                    unchanged[name] = outcome.counts["unchanged"]
                    assert outcome.counts["downloaded"] == 0
        drive_downloads = drive.media_requests() - downloads_before
        blobs_after = sum(1 for _ in (tmp / "local-data" / "blobs").rglob("*"))
    print(f"Sync of an unchanged linked folder of {args.files} files, {args.rounds} interleaved rounds\n")
    print("| connector | first sync downloaded | unchanged found | seconds, median (min–max) | downloads in timed rounds |")
    print("|---|---|---|---|---|")
    for name, times in seconds.items():
        made = drive_downloads if name == "google-drive" else blobs_after - blobs_before
        print(
            f"| {name} | {first[name]} | {unchanged[name]} | {statistics.median(times):.3f} "
            f"({min(times):.3f}–{max(times):.3f}) | {made} |"
        )


if __name__ == "__main__":
    main()
