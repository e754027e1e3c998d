"""Delete consumed messages from the embedded broker's SQLite file.

kombu's SQLAlchemy transport marks a consumed row invisible and never deletes it (nor does it
redeliver it), so without this the broker file grows with every task ever sent. Work whose
message was lost is re-sent from the durable job rows by the sweeper, never from these rows.
"""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, inspect, text


def purge_consumed(broker_file: Path) -> int:
    if not broker_file.exists():
        return 0
    engine = create_engine(f"sqlite:///{broker_file}", connect_args={"timeout": 30})
    try:
        if not inspect(engine).has_table("kombu_message"):
            return 0
        with engine.begin() as connection:
            return connection.execute(text("DELETE FROM kombu_message WHERE visible = 0")).rowcount or 0
    finally:
        engine.dispose()
