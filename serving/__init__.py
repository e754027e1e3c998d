"""The HTTP server process: gunicorn's gevent worker, with the API's JSON errors for requests
gunicorn itself refuses.

Why outside ``app/``: gunicorn's master imports the worker class before it forks, and importing
anything under ``app`` runs ``app/__init__`` (Flask, Celery, SQLAlchemy, httpx, ssl). The gevent
worker must monkey-patch before those modules make their locks, threads and SSL contexts, so this
package imports nothing from the application; the worker patches first and only then loads
``app:create_app()`` (docs/decisions/0007).
"""
