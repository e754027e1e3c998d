"""Celery tasks: thin wrappers that turn a message into calls of pipeline/ and storage/."""
