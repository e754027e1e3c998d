"""Response headers that make the dashboard safe by default (no inline script, no framing)."""
from __future__ import annotations

from flask import Flask, Response

# 'wasm-unsafe-eval' lets pdf.js compile its bundled WebAssembly image decoder (JPEG 2000, which
# scanned PDFs use: without it their pages render blank); it allows no eval of JavaScript.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'self'; "
    "form-action 'self'; object-src 'none'"
)


def register_security_headers(app: Flask) -> None:
    @app.after_request
    def _headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response
