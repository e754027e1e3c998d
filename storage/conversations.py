"""Conversation namespaces, append-only transcripts and the revisions messages pin."""
from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from storage.models import ConversationThread, Message, Notebook, RevisionPin, in_notebook


def principal_for(notebook: Notebook, user_id: str) -> str:
    """Derived by the server, never chosen by a client: one per member, or one per notebook."""
    if notebook.conversation_mode == "shared":
        return f"notebook:{notebook.id}"
    return f"user:{user_id}"


def thread(session: Session, notebook: Notebook, user_id: str, *, create: bool) -> ConversationThread | None:
    """The caller's thread in the notebook's current mode (created on first use when asked)."""
    principal = principal_for(notebook, user_id)
    found = session.scalar(
        select(ConversationThread).where(
            in_notebook(ConversationThread, notebook),
            ConversationThread.mode == notebook.conversation_mode,
            ConversationThread.principal == principal,
        )
    )
    if found is None and create:
        found = ConversationThread(
            vault_hash=notebook.vault_hash,
            workspace_id=notebook.workspace_id,
            notebook_id=notebook.id,
            mode=notebook.conversation_mode,
            principal=principal,
        )
        session.add(found)
        session.flush()
    return found


def append(
    session: Session,
    conversation: ConversationThread,
    *,
    role: str,
    author_id: str | None,
    text: str,
    status: str | None = None,
    citations: list[dict[str, Any]] | None = None,
    related: list[dict[str, Any]] | None = None,
    pins: dict[str, str] | None = None,
) -> Message:
    message = Message(
        vault_hash=conversation.vault_hash,
        workspace_id=conversation.workspace_id,
        thread_id=conversation.id,
        role=role,
        author_id=author_id,
        text=text,
        status=status,
        citations=citations or [],
        related=related or [],
    )
    session.add(message)
    session.flush()
    session.add_all(
        RevisionPin(message_id=message.id, notebook_id=notebook_id, revision_id=revision_id)
        for notebook_id, revision_id in (pins or {}).items()
    )
    return message


def messages(session: Session, conversation: ConversationThread) -> list[Message]:
    return list(
        session.scalars(select(Message).where(Message.thread_id == conversation.id).order_by(Message.id)).all()
    )


def recent_messages(session: Session, conversation: ConversationThread, limit: int) -> list[Message]:
    """The last ``limit`` messages, oldest first: a turn's history. Read from the end of the thread
    rather than cut from all of it, so that a turn does not slow down as its thread grows."""
    newest = session.scalars(
        select(Message).where(Message.thread_id == conversation.id).order_by(Message.id.desc()).limit(limit)
    ).all()
    return list(reversed(newest))


def version(session: Session, conversation: ConversationThread) -> tuple[int, int, tuple[str, ...]]:
    """What the thread's messages are, without reading them: their number, the last one's id (a
    transcript is only appended to, or cleared whole) and the ids of the people who wrote them."""
    count, last = session.execute(
        select(func.count(Message.id), func.max(Message.id)).where(Message.thread_id == conversation.id)
    ).one()
    authors = session.scalars(
        select(Message.author_id).where(Message.thread_id == conversation.id, Message.author_id.is_not(None)).distinct()
    )
    return count, last or 0, tuple(sorted(authors))


def clear(session: Session, conversation: ConversationThread) -> int:
    return session.execute(delete(Message).where(Message.thread_id == conversation.id)).rowcount or 0


def pinned_revisions(session: Session, notebook: Notebook) -> set[str]:
    """Revisions of ``notebook`` that some message (in any notebook's transcript) answered from."""
    return set(session.scalars(select(RevisionPin.revision_id).where(RevisionPin.notebook_id == notebook.id)))
