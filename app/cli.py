"""The `gnosi` command line: serve, worker, db upgrade, user add."""
from __future__ import annotations

import os
import sys

import click

from app.config import Settings
from app.scaffold import scaffold_vault
from storage import accounts
from storage.db import Database
from storage.migrate import upgrade as migrate_upgrade
from storage.scope import ROLES
from tasks.celery_app import COORDINATOR, EXTRACT

FIRST_USER = "admin"
FIRST_WORKSPACE = "default"


@click.group()
def main() -> None:
    """Grounded notebooks: answers only from your sources, every claim cited."""


@main.group()
def db() -> None:
    """Database maintenance."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every Alembic migration to LOCAL_DATA/system/notebooks.sqlite3."""
    settings = Settings.from_env()
    settings.ensure_dirs()
    migrate_upgrade(settings.database_path)
    click.echo(f"database at {settings.database_path} is up to date")


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
    migrate_upgrade(settings.database_path)
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
    migrate_upgrade(settings.database_path)
    with Database(settings.database_path).session() as session:
        if not accounts.set_password(session, settings.vault_hash, name, password):
            raise click.ClickException(f"no user named {name}")
    click.echo(f"password of {name} updated")


@user.command("revoke")
@click.argument("token")
def user_revoke(token: str) -> None:
    """Revoke an API token at once (it stops working on the next request)."""
    settings = Settings.from_env()
    with Database(settings.database_path).session() as session:
        if not accounts.revoke_token(session, settings.vault_hash, token):
            raise click.ClickException("unknown or already revoked token")
    click.echo("token revoked")


@main.command()
@click.option("--worker-concurrency", default=2, show_default=True, help="Embedded worker processes.")
def serve(worker_concurrency: int) -> None:
    """Run the API (and, without CELERY_BROKER_URL, a worker on the embedded broker)."""
    from app.serve import serve as run_server

    settings = Settings.from_env()
    settings.ensure_dirs()
    migrate_upgrade(settings.database_path)
    if scaffold_vault(settings):
        click.echo(f"empty vault: created a References table in {settings.vault_path} (see References/_template.md)")
    _first_run_account(settings)
    mode = "embedded broker (no Redis)" if settings.embedded else f"broker {settings.broker_url}"
    click.echo(f"gnosi: http://{settings.host}:{settings.port}/ · vault {settings.vault_path} · {mode}")
    run_server(settings, worker_concurrency=worker_concurrency)


def _first_run_account(settings: Settings) -> None:
    """On an empty instance, create an admin and print its token so the first user can sign in."""
    with Database(settings.database_path).session() as session:
        if accounts.count_users(session, settings.vault_hash):
            return
        _, token = accounts.add_user(session, settings.vault_hash, FIRST_USER, FIRST_WORKSPACE, "admin")
    click.echo(f"first run: created user '{FIRST_USER}' (admin of '{FIRST_WORKSPACE}').")
    click.echo(f"API token (shown once, keep it): {token}")


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("-Q", "--queues", default=f"{COORDINATOR},{EXTRACT}", show_default=True)
@click.option("-c", "--concurrency", default=2, show_default=True)
@click.option("-B", "--beat", is_flag=True, help="Also run the job sweeper schedule (one worker only).")
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(queues: str, concurrency: int, beat: bool, celery_args: tuple[str, ...]) -> None:
    """Run a Celery worker (a thin wrapper over `celery worker`); extra args go to Celery."""
    from app.serve import worker_command

    command = worker_command(queues, concurrency, loglevel="INFO", beat=beat) + list(celery_args)
    os.execv(sys.executable, command)
