"""Over HTTP, one bad file of a multi-file upload fails that file only; the job lists each file's outcome."""

from __future__ import annotations

import pytest

from conftest import Service, upload, wait_for_job

pytestmark = pytest.mark.integration

USER = 311  # this module's tenant (other modules use other ids: the inspection tests use 301-303)

GOOD = {
    "moons.txt": "Ganymede, a moon of Jupiter, is the largest moon in the solar system.",
    "bread.md": "# Sourdough\n\nA sourdough starter is flour and water fermented by wild yeast.",
}
BAD = {
    "deep.json": b"[" * 60_000 + b"]" * 60_000,  # RecursionError in the json parser
    "binary.md": b"\x00\x1b[2J\x00 not text at all \x00",
    "after.txt": "A file after the bad ones: Saturn's rings are made of ice and rock.",
}


SET = 4101  # a set of its own: the service fixture is shared with other modules' tests


def test_one_bad_file_fails_alone_and_the_job_reports_each_file(service: Service) -> None:
    with service.client(service.key(USER)) as client:
        response = upload(
            client, SET, {"deep.json": BAD["deep.json"], **GOOD, **{k: BAD[k] for k in ("binary.md", "after.txt")}}
        )
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["job_id"])

        files = {f["filename"]: f for f in job["report"]["files"]}
        assert {name: f["status"] for name, f in files.items()} == {
            "deep.json": "failed",
            "binary.md": "failed",
            "moons.txt": "succeeded",
            "bread.md": "succeeded",
            "after.txt": "succeeded",
        }
        assert "RecursionError" in files["deep.json"]["error"]
        assert "binary content" in files["binary.md"]["error"]
        assert files["moons.txt"]["error"] is None
        failures = {f["source"].rsplit("/", 1)[-1]: f for f in job["report"]["failures"]}
        assert sorted(failures) == ["binary.md", "deep.json"]
        assert job["status"] != "succeeded" and "deep.json" in job["error"]
        failed_runs = [r for r in job["runs"] if r["status"] == "FAILED"]
        assert sorted(r["failed_stage"] for r in failed_runs) == ["LOADING", "LOADING"]

        documents = {d["filename"]: d for d in client.get(f"/v1/sets/{SET}/documents").json()["documents"]}
        assert {n: d["status"] for n, d in documents.items()} == {
            **dict.fromkeys(GOOD, "SUCCESS"),
            "after.txt": "SUCCESS",
            "deep.json": "FAILED",
            "binary.md": "FAILED",
        }
        hits = client.post("/v1/search", json={"query": "rings of Saturn", "set_id": SET, "top_k": 1}).json()["hits"]
        assert hits[0]["filename"] == "after.txt"

        # a fixed re-upload of the failed file is retried and succeeds
        again = upload(client, SET, {"deep.json": '[{"_id": "x", "text": "Titan has a thick nitrogen atmosphere."}]'})
        job = wait_for_job(client, again.json()["job_id"])
        assert job["status"] == "succeeded", job
        assert job["report"]["files"] == [
            {
                "path": job["report"]["files"][0]["path"],
                "filename": "deep.json",
                "status": "succeeded",
                "documents": {"added": 1},
                "error": None,
            }
        ]
