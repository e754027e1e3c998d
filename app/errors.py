"""One JSON error shape for everything a client can get wrong: ``{"code", "message"}``."""
from __future__ import annotations

import logging
from typing import Any

from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from pipeline.types import PipelineError

log = logging.getLogger(__name__)

# Pipeline failures a request can cause map to client errors; the rest of their codes are 422.
PIPELINE_STATUS = {
    "TABLE_NOT_FOUND": 409,
    "RESOURCE_NOT_FOUND": 404,
    "PATH_OUTSIDE_VAULT": 400,
    "BAD_PAGINATION": 400,
    "PAGE_SIZE_TOO_LARGE": 400,
    "TOO_MANY_RESOURCES": 400,
    "ATTACHMENT_MISSING": 404,
}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def error_response(status: int, code: str, message: str, **extra: Any):  # type: ignore[no-untyped-def]
    response = jsonify({"code": code, "message": message, **extra})
    response.status_code = status
    return response


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(err: ApiError):  # type: ignore[no-untyped-def]
        response = error_response(err.status, err.code, err.message, **err.extra)
        if "retry_after" in err.extra:
            response.headers["Retry-After"] = str(err.extra["retry_after"])
        return response

    @app.errorhandler(PipelineError)
    def _pipeline_error(err: PipelineError):  # type: ignore[no-untyped-def]
        return error_response(PIPELINE_STATUS.get(err.code, 422), err.code, err.message)

    @app.errorhandler(HTTPException)
    def _http_error(err: HTTPException):  # type: ignore[no-untyped-def]
        code = (err.name or "HTTP_ERROR").upper().replace(" ", "_")
        return error_response(err.code or 500, code, err.description or code)

    @app.errorhandler(Exception)
    def _unexpected(err: Exception):  # type: ignore[no-untyped-def]
        log.exception("unhandled error")
        return error_response(500, "INTERNAL_ERROR", "The server failed to handle this request.")
