"""Use cases that combine the catalogue, storage and the task queue for the HTTP layer."""
