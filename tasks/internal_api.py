"""How an extract worker reaches the instance that owns the database: over HTTP, never SQLite."""
from __future__ import annotations

import httpx

from pipeline.types import PipelineError

TIMEOUT = httpx.Timeout(60.0, connect=5.0)
# Connection attempts retried inside the client (a restarting API instance), so an upload does not
# send the whole extraction back through the task's own, much slower, retry.
CONNECT_RETRIES = 3


class InternalApiUnavailable(Exception):
    """The API instance did not answer; the task retries later instead of failing the source."""


class InternalApi:
    """One per worker process: the connection pool is reused across tasks (building an httpx
    client costs more than a small request)."""

    def __init__(self, base_url: str, secret: str, max_bytes: int) -> None:
        self.base_url = base_url
        self.max_bytes = max_bytes
        self.client = httpx.Client(
            base_url=base_url,
            timeout=TIMEOUT,
            headers={"Authorization": f"Bearer {secret}"},
            trust_env=False,
            transport=httpx.HTTPTransport(retries=CONNECT_RETRIES),
        )

    def _send(
        self, method: str, path: str, body: bytes | None = None, *, json: dict[str, str] | None = None
    ) -> httpx.Response:
        headers = {"Content-Type": "application/octet-stream"} if body is not None else None
        try:
            return self.client.request(method, path, content=body, json=json, headers=headers)
        except httpx.TransportError as err:
            raise InternalApiUnavailable(f"{self.base_url}: {err}") from err

    def _get(self, path: str) -> httpx.Response:
        return self._send("GET", path)

    @staticmethod
    def _raise_for(response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        if response.status_code >= 500:
            raise InternalApiUnavailable(f"internal API answered {response.status_code}")
        if response.status_code == 401:
            raise PipelineError(
                "INTERNAL_AUTH_INVALID",
                "This extract worker's GNOSI_INTERNAL_TOKEN is not the API instance's shared secret: "
                "give every worker the same value as the instance.",
            )
        try:
            body = response.json()
            raise PipelineError(body.get("code", "INTERNAL_API_ERROR"), body.get("message", ""))
        except ValueError:
            raise PipelineError("INTERNAL_API_ERROR", f"internal API answered {response.status_code}") from None

    def put_evidence(self, job_id: str, source_id: str, pack_id: str, pack: bytes) -> None:
        """Upload a source's evidence pack; PipelineError("JOB_CANCELLED" / "SOURCE_NOT_PENDING"
        / "EVIDENCE_TOO_LARGE" / "EVIDENCE_PACK_INVALID") when the instance will not take it."""
        self._raise_for(self._send("PUT", f"/internal/jobs/{job_id}/sources/{source_id}/evidence/{pack_id}", pack))

    def report_activity(self, job_id: str, source_id: str, activity: str) -> str:
        """Tell the instance what this worker is doing on a source (it extends the job's lease);
        answers the job's state."""
        path = f"/internal/jobs/{job_id}/sources/{source_id}/activity"
        response = self._send("POST", path, json={"activity": activity})
        self._raise_for(response)
        return response.json()["state"]

    def job_state(self, job_id: str) -> str:
        response = self._get(f"/internal/jobs/{job_id}")
        self._raise_for(response)
        return response.json()["state"]

    def attachment(self, job_id: str, source_id: str) -> tuple[bytes, str]:
        """The attachment's bytes and file name, read by the API instance inside its vault.

        Raises PipelineError("JOB_CANCELLED") when the job was cancelled meanwhile.
        """
        response = self._get(f"/internal/sources/{source_id}/content?job={job_id}")
        self._raise_for(response)
        if len(response.content) > self.max_bytes:
            raise PipelineError("FILE_TOO_LARGE", f"the attachment is over {self.max_bytes} bytes")
        disposition = response.headers.get("content-disposition", "")
        filename = disposition.split("filename=")[-1].strip('"') if "filename=" in disposition else "attachment"
        return response.content, filename

    def extraction(self, key: str) -> bytes | None:
        """A cached extraction's bytes, None when the cache has none under ``key``."""
        response = self._get(f"/internal/extractions/{key}")
        if response.status_code == 404:
            return None
        self._raise_for(response)
        return response.content

    def has_extraction(self, key: str) -> bool:
        response = self._send("HEAD", f"/internal/extractions/{key}")
        if response.status_code == 404:
            return False
        self._raise_for(response)
        return True

    def put_extraction(self, key: str, data: bytes) -> None:
        self._raise_for(self._send("PUT", f"/internal/extractions/{key}", data))
