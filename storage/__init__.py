"""Persistence: every SQL statement of the service lives in this package."""
