"""Pure domain logic of grounded notebooks: no Flask, no Celery, no database sessions."""
