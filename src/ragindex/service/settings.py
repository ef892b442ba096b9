"""Settings of the HTTP service (environment prefix ``RAGINDEX_``, like the engine's settings)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

AUTO_SEARCH_PROCESSES_MAX = 2
"""Most search processes started by default: on 2 cores, 3 or 4 served no more searches than 2 (docs/service.md)."""


class ServiceSettings(BaseSettings):
    """What only the HTTP service reads; the engine's settings stay in :class:`ragindex.config.Settings`."""

    model_config = SettingsConfigDict(
        env_prefix="RAGINDEX_", env_file=".env", env_file_encoding="utf-8", extra="ignore", validate_default=True
    )

    @property
    def search_process_count(self) -> int:
        """How many search processes the service starts: ``search_processes``, or its default for this machine."""
        if self.search_processes is not None:
            return self.search_processes
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return 0 if cores < 2 else min(cores, AUTO_SEARCH_PROCESSES_MAX)

    blob_dir: Path | None = Field(
        None, description="Where uploads are kept: `<blob_dir>/<user_id>/<set_id>/`; default `<data_dir>/blobs`."
    )
    source_roots: list[Path] = Field(
        default_factory=list,
        description="Folders documents were ingested from on the server (`ragindex ingest`, `watch`), as a JSON "
        "list: the API shows such a document's `source` relative to the deepest root that holds it, an upload's "
        "relative to its set's upload folder, anything else as its file name (never a server path). "
        "`watch --serve` adds the watched paths.",
    )
    max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Largest uploaded file (413 above it).")
    max_upload_files: int = Field(100, ge=1, description="Most files in one upload request.")
    max_concurrent_uploads: int = Field(
        8,
        ge=1,
        description="Most uploads whose body is still arriving at once; one more answers 503 with `Retry-After` "
        "before its body is read. Each holds a connection and up to `RAGINDEX_MAX_UPLOAD_BYTES` of spooled disk, "
        "and the jobs ingest one at a time per tenant anyway.",
    )
    job_torch_threads: int = Field(
        1, ge=1, description="torch threads of each ingest job thread (leave a core to the query encoder)."
    )
    job_workers: int = Field(
        2,
        ge=1,
        description="Job threads of the in-process runner. A tenant's jobs run one at a time, in order; tenants "
        "with waiting jobs take turns, so up to this many tenants' jobs run at once and (from 2) one tenant's slow "
        "file never holds every thread. 2 suits 2 cores: files parse in child processes, so a second thread lets "
        "another tenant's job start while one file is parsed; more threads would embed on the same cores.",
    )
    job_max_starts: int = Field(
        3,
        ge=1,
        description="A job whose process ended while it ran (a crash, an out-of-memory kill, a liveness probe's "
        "restart) is run again at the next start, up to this many starts in all; then it is failed with that "
        "reason instead of killing each new process (in-process jobs and `ragindex worker` redeliveries).",
    )
    query_torch_threads: int = Field(1, ge=1, description="torch threads of the query encoder thread.")
    query_batch_max: int = Field(64, ge=1, description="Most concurrent queries encoded in one forward pass.")
    search_processes: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Search processes: each runs searches' Python (encode, truth-store reads, hits, JSON) on its own "
        "core while the service keeps the index (about 275 MiB each: its own query model). Unset: one per CPU core "
        "the service may use, at most 2 (none on one core); 0: searches run in the service process.",
    )
    search_batch_max: int = Field(
        4,
        ge=1,
        le=256,
        description="Most waiting searches a search process takes at once (their queries encoded together; the "
        "batch is answered when its last search is done, so a larger one lengthens the wait of its first).",
    )
    warm_up: bool = Field(
        True,
        description="Load the dense model at start-up, on a thread of its own (the first search is not slow): "
        "`/readyz` answers 503 (`dense: loading`) until it is loaded.",
    )
    job_shutdown_seconds: float = Field(
        60.0,
        ge=0,
        description="On shutdown, wait this long for a running job (a job still running then goes back to "
        "`queued`, its start not counted).",
    )
    # --- exposure of the unauthenticated surface ----------------------------------------------------
    metrics_public: bool = Field(
        False,
        description="Serve `/metrics` without a key. Default: it needs an admin key (`Authorization: Bearer`), "
        "so a public bind does not publish the chunk counts and request rates; set true when only a trusted "
        "network reaches the port.",
    )
    api_docs: bool = Field(
        True,
        description="Serve the API docs: `/openapi.json`, Swagger UI at `/docs` and ReDoc at `/redoc`, with their "
        "scripts from the installed `fastapi-offline` package (never a CDN). False: all three answer 404.",
    )
    # --- distributed workers (ragindex.service.queue) -----------------------------------------------
    queue_url: str | None = Field(
        None,
        description="Broker of the ingest workers: `redis://host:6379/0` or `amqp://user:pass@host:5672/`. "
        "Set, the service enqueues upload jobs for `ragindex worker` and runs none itself; unset, jobs run in-process.",
    )
    queue_name: str = Field("ragindex-ingest", min_length=1, description="Broker queue of ingest jobs.")
    result_queue: str = Field("ragindex-results", min_length=1, description="Broker queue the events are published on.")
    events_url: str | None = Field(
        None,
        description="Broker the `parse_result` and `document_result` events are published on "
        "(`RAGINDEX_RESULT_QUEUE`); default `RAGINDEX_QUEUE_URL`. Set it alone to get the in-process service's "
        "events on a broker.",
    )
    webhook_url: str | None = Field(
        None, description="Also POST each `parse_result` and `document_result` event (JSON) to this URL."
    )
    webhook_timeout: float = Field(10.0, gt=0, description="Timeout of one webhook POST in seconds.")
    webhook_attempts: int = Field(3, ge=1, le=20, description="Webhook POST attempts (backoff 0.5 s, 1 s, 2 s, ...).")
    job_time_limit_seconds: float = Field(
        6 * 3600.0, gt=0, description="A worker abandons (and fails) an ingest job running longer than this."
    )
    job_max_retries: int = Field(
        3, ge=0, description="Broker redeliveries of a job whose worker hit an infrastructure error (store down)."
    )
