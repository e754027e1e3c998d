"""The `gnosi` command line: serve, worker, flower, db upgrade, backup, restore, user."""
from __future__ import annotations

import importlib.util
import os
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import click

from app.config import Settings
from app.instance_lock import InstanceLock, LockHeld, beat_lock
from app.scaffold import scaffold_vault
from storage import accounts, sessions
from storage.db import Database
from storage.backup import BackupError, Manifest, backup, restore
from storage.migrate import current_revision, head
from storage.migrate import upgrade as migrate_upgrade
from storage.scope import ROLES
from tasks.celery_app import ALL_QUEUES

FIRST_USER = "admin"
FIRST_WORKSPACE = "default"
FIRST_RUN_TOKEN_FILE = "first-run-admin-token"


@click.group()
def main() -> None:
    """Grounded notebooks: answers only from your sources, every claim cited."""
    # Everything this instance writes (database, broker file, secrets, blobs, spool) holds other
    # users' documents and credentials: readable by the service's own account only.
    os.umask(0o077)


@main.group()
def db() -> None:
    """Database maintenance."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every Alembic migration to LOCAL_DATA/system/notebooks.sqlite3 (after a backup)."""
    settings = Settings.from_env()
    settings.ensure_dirs()
    upgrade_database(settings)
    click.echo(f"database at {settings.database_path} is up to date")


def upgrade_database(settings: Settings) -> None:
    """Migrate the database, first backing up an existing one that a migration will change, into
    LOCAL_DATA/backups (blobs and cached extractions are hard links there: no copy, no space)."""
    database = settings.database_path
    found = current_revision(database) if database.is_file() else None
    if found is not None and found != head():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = settings.local_data / "backups" / f"{stamp}-before-schema-{head()}"
        _report("backed up before the upgrade", target, _backup_or_exit(settings, target))
    migrate_upgrade(database)


@main.command("backup")
@click.argument("path", type=click.Path(path_type=Path))
def backup_command(path: Path) -> None:
    """Back up LOCAL_DATA into PATH (new or empty) while the service runs: the database, secrets,
    kept attachment bytes and cached extractions, with a manifest of checksums."""
    _report("backed up", path, _backup_or_exit(Settings.from_env(), path))


@main.command("restore")
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
def restore_command(path: Path) -> None:
    """Restore the backup at PATH into LOCAL_DATA, which must hold no database yet; every file is
    checked first, and a database from an older schema is upgraded."""
    settings = Settings.from_env()
    settings.ensure_dirs()
    try:
        manifest = restore(path, settings.local_data)
    except BackupError as err:
        raise click.ClickException(f"{err.code}: {err.message}") from None
    migrate_upgrade(settings.database_path)
    _report("restored", settings.local_data, manifest)


def _backup_or_exit(settings: Settings, target: Path) -> Manifest:
    try:
        return backup(settings.local_data, target)
    except BackupError as err:
        raise click.ClickException(f"{err.code}: {err.message}") from None


def _report(done: str, where: Path, manifest: Manifest) -> None:
    click.echo(
        f"{done}: {where} · {len(manifest.files)} files, {manifest.size / 2**20:.1f} MiB · "
        f"schema {manifest.schema} · made {manifest.created_at}"
    )


@main.group()
def user() -> None:
    """Accounts and API tokens."""


@user.command("add")
@click.argument("name")
@click.option("--workspace", required=True, help="Workspace name (created when missing).")
@click.option("--role", type=click.Choice(ROLES), required=True)
def user_add(name: str, workspace: str, role: str) -> None:
    """Create a user (or give an existing one a role) and print a new API token on the last line."""
    settings = Settings.from_env()
    settings.ensure_dirs()
    upgrade_database(settings)
    with Database(settings.database_path).session() as session:
        _, token = accounts.add_user(session, settings.vault_hash, name, workspace, role)
    click.echo(f"user {name} is {role} of workspace {workspace}; API token (shown once):")
    click.echo(token)


@user.command("password")
@click.argument("name")
@click.password_option(prompt="New password", help="Read from the terminal, or from standard input when piped.")
def user_password(name: str, password: str) -> None:
    """Set the dashboard password of an existing user."""
    settings = Settings.from_env()
    upgrade_database(settings)
    with Database(settings.database_path).session() as session:
        found = accounts.find_user(session, settings.vault_hash, name)
        if found is None:
            raise click.ClickException(f"no user named {name}")
        accounts.set_password(found, password)
        ended = sessions.end_sessions_of(session, settings.vault_hash, found.id)
    click.echo(f"password of {name} updated; {ended} open session(s) ended")


@user.command("revoke")
@click.option(
    "--file", "token_file", type=click.File("r"), default="-", show_default="standard input",
    help="Read the token from this file.",
)
def user_revoke(token_file) -> None:  # type: ignore[no-untyped-def]
    """Revoke an API token and every dashboard session opened with it, at once.

    The token is read from standard input (or --file), never from the command line, where
    other users of the machine could read it in the process list or shell history.
    """
    token = token_file.read().strip()
    if not token:
        raise click.ClickException("no token given: pipe it in, or pass --file")
    settings = Settings.from_env()
    with Database(settings.database_path).session() as session:
        if not accounts.revoke_token(session, settings.vault_hash, token):
            raise click.ClickException("unknown or already revoked token")
    click.echo("token revoked, with every session opened with it")


@user.command("sign-out")
@click.argument("name")
def user_sign_out(name: str) -> None:
    """End every dashboard session of a user (API tokens stay; revoke those one by one)."""
    settings = Settings.from_env()
    with Database(settings.database_path).session() as session:
        found = accounts.find_user(session, settings.vault_hash, name)
        if found is None:
            raise click.ClickException(f"no user named {name}")
        ended = sessions.end_sessions_of(session, settings.vault_hash, found.id)
    click.echo(f"{ended} session(s) of {name} ended")


@main.command()
@click.option("--worker-concurrency", default=2, show_default=True, help="Embedded worker processes.")
@click.option("--reload", is_flag=True, help="Development: restart when code under app/, pipeline/, storage/, tasks/ changes.")
@click.option("--lock-wait", default=0.0, hidden=True, help="Seconds to wait for a stopping predecessor's beat lock.")
def serve(worker_concurrency: int, reload: bool, lock_wait: float) -> None:
    """Run the API (and, without CELERY_BROKER_URL, a worker on the embedded broker)."""
    if reload:
        from app.dev_reload import serve_reloading

        serve_reloading(["--worker-concurrency", str(worker_concurrency)])
        return
    from app.serve import serve as run_server

    settings = Settings.from_env()
    settings.ensure_dirs()
    holder = f"gnosi serve (pid {os.getpid()})"
    lock = _take_beat_lock(settings, holder, wait_seconds=lock_wait) if settings.embedded else None
    upgrade_database(settings)
    if scaffold_vault(settings):
        click.echo(f"empty vault: created a References table in {settings.vault_path} (see References/_template.md)")
    _first_run_account(settings)
    mode = "embedded broker (no Redis)" if settings.embedded else f"broker {settings.broker_url}"
    click.echo(f"gnosi: http://{settings.host}:{settings.port}/ · vault {settings.vault_path} · {mode}")
    run_server(settings, lock, worker_concurrency=worker_concurrency)


def _take_beat_lock(settings: Settings, holder: str, wait_seconds: float = 0) -> InstanceLock:
    """Refuse, naming the process to stop, to start a second job sweeper for this LOCAL_DATA
    (after ``wait_seconds``: a reload's predecessor may still be stopping)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return beat_lock(settings, holder)
        except LockHeld as held:
            if time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            raise click.ClickException(
                f"LOCAL_DATA {settings.local_data} already runs a job sweeper: {held}. "
                "Stop it first: a second start would add a second job sweeper (Celery beat) on the same database."
            ) from None


def _first_run_account(settings: Settings) -> None:
    """On an empty instance, create an admin and hand its token to the person who started it.

    On a terminal it is printed; otherwise (a service manager, a log file others may read) it
    goes to a file only this account can read, and the log names the file, not the token.
    """
    with Database(settings.database_path).session() as session:
        if accounts.count_users(session, settings.vault_hash):
            return
        _, token = accounts.add_user(session, settings.vault_hash, FIRST_USER, FIRST_WORKSPACE, "admin")
    click.echo(f"first run: created user '{FIRST_USER}' (admin of '{FIRST_WORKSPACE}').")
    if sys.stdout.isatty():
        click.echo(f"API token (shown once, keep it): {token}")
        return
    path = settings.system_dir / FIRST_RUN_TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    click.echo(f"API token written to {path} (readable only by this account); delete the file after signing in.")


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("-Q", "--queues", default=",".join(ALL_QUEUES), show_default=True,
              help="coordinator,analysis: database steps; extract,chunk: an extract worker (no database).")
@click.option("-c", "--concurrency", default=2, show_default=True)
@click.option("-B", "--beat", is_flag=True, help="Also run the job sweeper schedule (one worker only).")
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(queues: str, concurrency: int, beat: bool, celery_args: tuple[str, ...]) -> None:
    """Run a Celery worker (a thin wrapper over `celery worker`); extra args go to Celery.

    With --beat it first takes this LOCAL_DATA's beat lock, which the worker keeps across exec."""
    from app.serve import worker_command

    if beat:
        _take_beat_lock(Settings.from_env(), f"gnosi worker --beat (pid {os.getpid()})").keep_across_exec()
    command = worker_command(queues, concurrency, loglevel="INFO", beat=beat) + list(celery_args)
    os.execv(sys.executable, command)


@main.command("worker-ping")
@click.argument("role")
@click.option("--timeout", default=5.0, show_default=True, help="Seconds to wait for an answer.")
def worker_ping(role: str, timeout: float) -> None:
    """Exit 0 when a worker of ROLE on this host answers through the broker (a healthcheck).

    ROLE is the first part of the worker's node name: coordinator, analysis or extract for the
    commands compose.yaml runs."""
    from celery import Celery

    from tasks.celery_app import celery_config
    from tasks.liveness import answering_nodes

    settings = Settings.from_env()
    if settings.embedded:
        raise click.ClickException("The embedded broker carries no broadcasts: ask web's /readyz instead.")
    celery_app = Celery(set_as_current=False)
    celery_app.config_from_object(celery_config(settings))
    nodes = answering_nodes(celery_app, role, socket.gethostname(), timeout)
    if not nodes:
        raise click.ClickException(f"No {role} worker on this host answered within {timeout:g} s.")
    click.echo(f"{nodes[0]} answered")


@main.command()
@click.option("--address", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=5555, show_default=True)
@click.option(
    "--unauthenticated-private-network", is_flag=True,
    help="Run without a password (only on a network nobody else can reach).",
)
def flower(address: str, port: int, unauthenticated_private_network: bool) -> None:
    """Run Flower, the Celery monitor, on this instance's broker.

    Flower shows task arguments (vault paths, the URLs of every workspace), so it needs
    FLOWER_BASIC_AUTH=user:password in the environment (Flower reads it there, which keeps the
    password out of the process list) unless told it is on a private network.
    """
    environment = dict(os.environ)
    if unauthenticated_private_network:
        environment["FLOWER_UNAUTHENTICATED_API"] = "true"
    elif not environment.get("FLOWER_BASIC_AUTH"):
        raise click.ClickException(
            "Flower shows every workspace's task arguments: set FLOWER_BASIC_AUTH=user:password "
            "(or pass --unauthenticated-private-network on a network nobody else can reach)."
        )
    if importlib.util.find_spec("flower") is None:
        raise click.ClickException("Flower is not installed here: pip install -e '.[flower]'")
    command = [sys.executable, "-m", "celery", "-A", "tasks.worker", "flower", f"--address={address}", f"--port={port}"]
    os.execve(sys.executable, command, environment)


if __name__ == "__main__":  # `python -m app.cli`: how `serve --reload` starts its child
    main()
