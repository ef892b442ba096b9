"""The API surface over real HTTP: the OpenAPI document, offline docs pages, /metrics exposure, relative sources,
rerank without a reranker (422), and /v1/version."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import Service, upload, wait_for_job
from ragindex.about import package_version
from ragindex.config.settings import DEFAULT_DENSE_MODEL, Settings
from ragindex.retrieval.rerank import MODEL_SETTING
from ragindex.service.app import create_app
from ragindex.service.hygiene import DIFY_PATHS
from ragindex.service.keys import create_key
from ragindex.service.settings import ServiceSettings
from ragindex.store.migrations import MIGRATIONS

pytestmark = pytest.mark.integration

USER, ADMIN_USER = 31, 32
SET = 1
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def keys(service: Service) -> dict[str, str]:
    return {"user": service.key(USER), "admin": service.key(ADMIN_USER, admin=True)}


@pytest.fixture(scope="module")
def uploaded(service: Service, keys: dict[str, str]) -> dict[str, object]:
    with service.client(keys["user"]) as client:
        response = upload(client, SET, {"comets.md": "# Comets\n\nA comet's tail points away from the Sun.\n"})
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["job_id"])
        broken = upload(client, SET, {"broken.json": '{"title": "never closed"'}).json()["job_id"]
        failed = wait_for_job(client, broken)
    assert job["status"] == "succeeded", job
    return {"job": job, "failed": failed}


@pytest.fixture(scope="module")
def other_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A second service (own data dir): docs off, /metrics public, a reranker model that does not exist."""
    root = tmp_path_factory.mktemp("surface")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=root / "data",
        rerank_model=str(root / "no-such-reranker"),
    )
    service = ServiceSettings(_env_file=None, api_docs=False, metrics_public=True, warm_up=False)  # type: ignore[call-arg]
    with TestClient(create_app(settings, service)) as client:
        client.headers["Authorization"] = f"Bearer {create_key(client.app.state.service.store, user_id=5)['key']}"  # type: ignore[attr-defined]
        yield client


# ---------------------------------------------------------------------- OpenAPI
def test_every_operation_documents_its_answers_and_errors_with_examples(service: Service) -> None:
    spec = httpx.get(f"{service.url}/openapi.json").json()
    assert spec["info"]["version"] == package_version() and spec["info"]["license"]["name"] == "Apache-2.0"
    error_schema = spec["components"]["schemas"]["ErrorOut"]
    assert set(error_schema["properties"]) >= {"error", "message", "context"} and error_schema["examples"]
    operations = [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]
    assert {(p, m) for p, m, _ in operations} >= {("/v1/search", "post"), ("/v1/version", "get"), ("/metrics", "get")}
    for path, method, op in operations:
        assert method in METHODS, (path, method)
        assert op.get("summary") and op.get("description"), (path, method)
        responses = op["responses"]
        ok = next(str(s) for s in responses if str(s).startswith("2"))
        content = responses[ok].get("content", {})
        if path not in ("/healthz",):
            assert content, (path, method, "no documented 2xx body")
            media = next(iter(content.values()))
            has_example = "example" in media or "examples" in media
            schema = media.get("schema", {})
            ref = schema.get("$ref", "")
            model = spec["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {}) if ref else {}
            assert has_example or model.get("examples") or _documented(spec, schema), (path, method, "no example")
        if path.startswith("/v1/") and path not in DIFY_PATHS:  # Dify's retrieval answers Dify's 403 instead
            assert "401" in responses, (path, method)
        for status, answer in responses.items():
            if status.startswith(("4", "5")):
                body = next(iter(answer["content"].values()))
                assert "example" in body or "examples" in body, (path, method, status)
    # FastAPI's default 422 body ({"detail": [...]}) is not what the service answers: every route declares its own
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def _documented(spec: dict[str, object], schema: dict[str, object]) -> bool:
    """A model whose fields are typed and described (the response models of the inspection routes)."""
    ref = str(schema.get("$ref", ""))
    components = spec["components"]
    assert isinstance(components, dict)
    model = components["schemas"].get(ref.rsplit("/", 1)[-1], {})
    return bool(model.get("properties"))


def test_request_bodies_carry_examples_that_the_api_accepts(service: Service, keys: dict[str, str]) -> None:
    spec = httpx.get(f"{service.url}/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("SearchRequest", "ChunkPatch", "RepairRequest", "SearchOut", "JobAccepted", "VersionOut"):
        assert schemas[name].get("examples"), name
    search = spec["paths"]["/v1/search"]["post"]
    assert search["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchRequest")
    assert search["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchOut")
    rerank = search["responses"]["422"]["content"]["application/json"]["examples"]["rerank_unavailable"]["value"]
    assert rerank["context"]["setting"] == MODEL_SETTING
    with service.client(keys["user"]) as client:
        for example in schemas["SearchRequest"]["examples"]:
            answer = client.post("/v1/search", json=example)
            assert answer.status_code == 200, (example, answer.text)
            assert set(answer.json()) >= set(schemas["SearchOut"]["required"])


# ---------------------------------------------------------------------- docs pages
LINK = re.compile(r"""(?:src|href|spec-url|data-openapi)="([^"]*)\"""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_only_local_assets_and_every_one_answers(service: Service, page: str) -> None:
    with httpx.Client(base_url=service.url, timeout=60) as client:
        answer = client.get(page)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "<script>" not in answer.text  # no inline script: the CSP would refuse it
        links = LINK.findall(answer.text)
        assert len(links) >= 3, answer.text
        for link in links:
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc and link.startswith("/"), link
            fetched = client.get(link)
            assert fetched.status_code == 200, link
            assert fetched.content, link
        scripts = [link for link in links if link.endswith(".js")]
        assert scripts
        bundle = client.get(scripts[0]).text
        assert ("SwaggerUIBundle" in bundle) if page == "/docs" else ("Redoc" in bundle)
        assert client.get("/docs/assets/../settings.py").status_code == 404
        assert client.get("/docs/assets/index.css").status_code == 404


def test_swagger_ui_is_a_version_that_renders_openapi_3_1(service: Service) -> None:
    spec = httpx.get(f"{service.url}/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    bundle = httpx.get(f"{service.url}/docs/assets/swagger-ui-bundle.js").text
    # Swagger UI 4 shows "Unable to render this definition" for OpenAPI 3.1; 5 reads it
    assert re.search(r'PACKAGE_VERSION:"5\.\d+\.\d+"', bundle), "not Swagger UI 5"


def test_docs_off_answer_404_and_public_metrics_need_no_key(other_app: TestClient) -> None:
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/assets/swagger-ui-bundle.js"):
        assert other_app.get(path).status_code == 404, path
    scrape = other_app.get("/metrics", headers={"Authorization": ""})
    assert scrape.status_code == 200 and "ragindex_chunks" in scrape.text


# ---------------------------------------------------------------------- /metrics
def test_metrics_need_an_admin_key_by_default(service: Service, keys: dict[str, str]) -> None:
    with service.client() as anonymous:
        refused = anonymous.get("/metrics")
    assert refused.status_code == 401 and refused.json()["error"] == "AuthenticationError"
    assert "RAGINDEX_METRICS_PUBLIC" in refused.json()["message"] and "ragindex_" not in refused.text
    with service.client(keys["user"]) as tenant:
        assert tenant.get("/metrics").status_code == 403
    with service.client(keys["admin"]) as admin:
        scrape = admin.get("/metrics")
    assert scrape.status_code == 200 and "ragindex_http_request_duration_seconds" in scrape.text
    assert scrape.headers["content-type"].startswith("text/plain")


# ---------------------------------------------------------------------- sources
def test_hits_documents_and_reports_carry_relative_sources(
    service: Service, keys: dict[str, str], uploaded: dict[str, object]
) -> None:
    server_path = str(service.state.blob_root)
    with service.client(keys["user"]) as client:
        found = client.post("/v1/search", json={"query": "which way does a comet's tail point", "set_id": SET})
        hits = found.json()["hits"]
        assert hits and hits[0]["source"] == "comets.md"
        listed = client.get(f"/v1/sets/{SET}/documents").json()["documents"]
        page = client.get("/v1/documents", params={"set_id": SET}).json()["documents"]
        doc_id = next(d["doc_id"] for d in listed if d["filename"] == "comets.md")
        detail = client.get(f"/v1/documents/{doc_id}").json()["document"]
        failed = client.get(f"/v1/jobs/{uploaded['failed']['job_id']}").json()  # type: ignore[index]
    assert {d["source"] for d in listed} == {d["source"] for d in page} == {"comets.md", "broken.json"}
    assert detail["source"] == detail["file"] == "comets.md"
    assert failed["report"]["failures"][0]["source"] == "broken.json"
    assert {f["path"] for f in failed["report"]["files"]} == {"broken.json"}
    for text in (found.text, str(listed), str(detail), str(failed)):
        assert server_path not in text
    # the truth store still holds the absolute path: only the answers are relative
    stored = service.state.engine.store.get_document(doc_id, user_id=USER)
    assert Path(stored.source_uri).is_absolute()


def test_documents_ingested_on_the_server_show_no_server_path(
    service: Service, keys: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "srv" / "handbook"
    (folder / "ops").mkdir(parents=True)
    (folder / "ops" / "pager.md").write_text("# Pager\n\nThe pager rotation changes every Monday at noon.\n")
    service.state.engine.ingest([folder], user_id=USER, set_id=SET + 1)
    with service.client(keys["user"]) as client:
        hits = client.post("/v1/search", json={"query": "when does the pager rotation change", "set_id": SET + 1})
    assert hits.json()["hits"][0]["source"] == "pager.md"  # outside every root: the file name only
    assert str(tmp_path) not in hits.text


# ---------------------------------------------------------------------- rerank, version
def test_rerank_without_a_reranker_is_422_naming_the_setting(other_app: TestClient) -> None:
    answer = other_app.post("/v1/search", json={"query": "anything", "set_id": 1, "rerank": True})
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "RerankerUnavailableError"
    assert body["context"]["setting"] == MODEL_SETTING and body["context"]["field"] == "rerank"
    assert MODEL_SETTING in body["message"] and "without rerank" in body["message"]
    assert other_app.post("/v1/search", json={"query": "anything", "set_id": 1, "rerank": False}).status_code == 200


def test_version_names_the_package_schema_and_model(service: Service, keys: dict[str, str]) -> None:
    with service.client(keys["user"]) as client:
        answer = client.get("/v1/version")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["version"] == package_version()
    assert body["schema"] == {"code": MIGRATIONS[-1][0], "database": MIGRATIONS[-1][0], "current": True}
    assert body["dense_model"] == DEFAULT_DENSE_MODEL
    assert body["collection"] is None or DEFAULT_DENSE_MODEL.rsplit("/", 1)[-1] in body["collection"]["dense"]
    with service.client() as anonymous:
        assert anonymous.get("/v1/version").status_code == 401
