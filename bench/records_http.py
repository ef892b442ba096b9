"""(h) HTTP batch upsert: ``python -m bench.records_http [N]`` (default 1,000 short records, one chunk each).

Starts ``ragindex serve`` over a scratch data dir, posts N records of SciFact text (the first 300 characters of each
abstract) as one ``POST /v1/sets/1/records`` batch, waits for its job, posts the same batch again (0 embedded), and
compares the first upsert, from the request to the job's end, with one raw ``SentenceTransformer.encode`` of the
same texts in a child process (``bench.encode``, the same model and float32). Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import BENCH_DIR, SCIFACT, python_module
from bench.load import RAGINDEX, _create_key, _free_port, _start_server

TEXT_CHARS = 300


def _texts(count: int) -> list[str]:
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    return [json.loads(line)["text"][:TEXT_CHARS] for line in lines]


def _wait(client: httpx.Client, answer: httpx.Response) -> dict[str, Any]:
    if answer.status_code == 200:
        body: dict[str, Any] = answer.json()
        return body
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job_id"]
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            assert job["status"] == "succeeded", job
            return job
        time.sleep(0.05)


def main(count: int) -> dict[str, Any]:
    texts = _texts(count)
    records = [{"key": f"abstract-{i}", "text": t} for i, t in enumerate(texts)]
    data_dir = Path(tempfile.mkdtemp(prefix="ragindex-records-http-"))
    port = _free_port()
    key = _create_key(data_dir)
    proc = _start_server(data_dir, port, {**os.environ, "RAGINDEX_OPTIMIZE_MIN_POINTS": "0"})
    out: dict[str, Any] = {"records": count, "text_chars": TEXT_CHARS}
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=600
        ) as client:
            started = time.perf_counter()
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.perf_counter() - started > 300:
                    raise SystemExit("the service did not become ready")
                time.sleep(0.2)
            out["ready_s"] = round(time.perf_counter() - started, 2)
            for phase in ("first", "same"):
                started = time.perf_counter()
                answer = client.post("/v1/sets/1/records", json={"records": records})
                done = _wait(client, answer)
                out[phase] = {"status": answer.status_code, "s": round(time.perf_counter() - started, 2)}
                report = done.get("report", done)
                if isinstance(report, dict) and "chunks" in report:
                    out[phase]["embedded"] = report["chunks"].get("embedded")
                    out[phase]["documents"] = {k: v for k, v in report.get("documents", {}).items() if v}
    finally:
        proc.terminate()
        proc.wait(60)
    texts_path = BENCH_DIR / "records-http-texts.json"
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    texts_path.write_text(json.dumps(texts))
    raw = python_module("bench.encode", str(texts_path), "float32").json()
    out["raw_encode_s"] = round(raw["encode_s"], 2)
    out["ratio"] = round(out["first"]["s"] / raw["encode_s"], 2)
    out["command"] = f"python -m bench.records_http {count}"
    out["server"] = " ".join(RAGINDEX[:1]) + " -m ragindex serve"
    return out


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)) + "\n")
