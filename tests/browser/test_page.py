"""The retrieval-testing page in headless Chromium against the real service over real HTTP.

The service (uvicorn on a free loopback port, temp data dir, the real engine) is started here; the
corpus is uploaded through the page's own upload form; the browser is the system ``chromium``
driven by Playwright (never ``playwright install``). Skips only when no chromium binary exists.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

import uvicorn  # noqa: E402

from ragindex.config.settings import Settings  # noqa: E402
from ragindex.service.app import create_app  # noqa: E402
from ragindex.service.keys import create_key  # noqa: E402
from ragindex.service.settings import ServiceSettings  # noqa: E402

pytestmark = pytest.mark.integration

CHROMIUM = next(
    (
        p
        for p in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
        if p and Path(p).exists()
    ),
    None,
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USER = 1
SET_ID = 7
CORPUS = {
    "vitamin.md": "# Bones\n\nVitamin D helps the body absorb calcium, which keeps bones strong.\n",
    "quantum.txt": "Quantum computers use qubits that can be in superposition.\n",
    "ocean.txt": "The Pacific is the largest and deepest ocean on Earth.\n",
    "broken.pdf": "this is not a PDF at all\n",
}
KEYS: dict[str, str] = {}
QUERY = "which vitamin helps absorb calcium for strong bones"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


class _Server:
    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(60)
        self.sock.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The service's URL and an admin key of tenant 1 (admin: the page's re-run calls POST /v1/repair)."""
    data_dir = tmp_path_factory.mktemp("page-data")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data_dir,
        rerank_model=str(data_dir / "no-such-reranker"),
        hf_offline=True,
    )
    app = create_app(settings, ServiceSettings(_env_file=None))  # type: ignore[call-arg]
    with _Server(app) as server:
        store = app.state.service.store
        key = create_key(store, user_id=USER, admin=True)["key"]
        KEYS["user"] = str(create_key(store, user_id=USER)["key"])
        yield server.url, str(key)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("no chromium binary (apt-get install chromium); .ci/services.sh installs it in CI")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, served: tuple[str, str]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text) if msg.type == "error" and "Failed to load resource" not in msg.text else None
        ),
    )
    page.goto(served[0] + "/")
    yield page
    context.close()
    assert not errors, errors


def _search(page: Any, expect_mode: str) -> None:
    page.click("#search-button")
    page.wait_for_function(
        "m => document.getElementById('search-status').textContent.includes('mode ' + m)", arg=expect_mode
    )


def test_upload_search_documents_and_rerun(page: Any, served: tuple[str, str], tmp_path: Path) -> None:
    page.fill("#api-key", served[1])
    page.fill("#set-id", str(SET_ID))
    page.dispatch_event("#set-id", "change")
    page.dispatch_event("#api-key", "change")

    # upload the corpus through the page and wait for its job
    for name, text in CORPUS.items():
        (tmp_path / name).write_text(text)
    page.click("#tab-documents")
    page.set_input_files("#files", [str(tmp_path / name) for name in CORPUS])
    page.click("#upload-button")
    page.wait_for_function(
        "() => /job \\w+ (succeeded|failed)/.test(document.getElementById('documents-status').textContent)"
    )
    rows = page.locator("#documents-body tr")
    assert rows.count() == len(CORPUS)
    statuses = {
        rows.nth(i).locator("td").nth(1).inner_text(): rows.nth(i).locator(".badge").inner_text()
        for i in range(rows.count())
    }
    assert statuses == {
        "vitamin.md": "SUCCESS",
        "quantum.txt": "SUCCESS",
        "ocean.txt": "SUCCESS",
        "broken.pdf": "FAILED",
    }
    broken = page.locator("#documents-body tr", has_text="broken.pdf")
    assert broken.locator(".error-text").inner_text().strip()
    page.screenshot(path=str(tmp_path / "documents.png"), full_page=True)

    # re-run: POST /v1/repair with the admin key, then the list is refreshed
    page.click("#rerun")
    page.wait_for_function("() => document.getElementById('documents-status').textContent.startsWith('repair ')")
    assert page.locator("#documents-body tr").count() == len(CORPUS)

    # the key and set were kept; GET /v1/sets filled the set list
    assert page.evaluate("localStorage.getItem('ragindex.apiKey')") == served[1]
    assert page.locator(f"#set-list option[value='{SET_ID}']").count() == 1

    # hybrid search: the right document first, per-source scores and the latency breakdown shown
    page.click("#tab-search")
    page.fill("#query", QUERY)
    page.select_option("#mode", "hybrid")
    _search(page, "hybrid")
    first = page.locator("#hits > li").first
    assert first.get_attribute("data-filename") == "vitamin.md"
    assert "Vitamin D helps" in first.locator(".text").inner_text()
    assert "section Bones" in first.locator(".where").inner_text()
    assert first.locator("tr[data-source='dense'] td").nth(1).inner_text() == "#1"
    assert first.locator("tr[data-source='bm25'] td").nth(1).inner_text() == "#1"
    for phase in ("encode", "search", "fuse", "backfill", "total"):
        assert float(page.locator(f"#latency td[data-phase='{phase}']").inner_text()) >= 0
    assert page.locator("#latency").is_visible()
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    if os.environ.get("DOCS_SCREENSHOTS") == "1":  # `make docs-screenshots`: the picture of docs/how-to/http-service.md
        page.screenshot(path=str(DOCS_IMAGES / "retrieval-testing-page.png"), full_page=True)

    # bm25 only: fusion is disabled, hits carry only bm25 scores, the right document is still first
    page.select_option("#mode", "bm25")
    assert page.locator("#fusion").is_disabled()
    _search(page, "bm25")
    first = page.locator("#hits > li").first
    assert first.get_attribute("data-filename") == "vitamin.md"
    assert first.locator("tr[data-source]").evaluate_all("rows => rows.map(r => r.dataset.source)") == ["bm25"]

    # rerank ticked without a reranker model: the API's error text is shown, no hits
    page.check("#rerank")
    page.click("#search-button")
    page.wait_for_function("() => document.getElementById('search-status').classList.contains('error')")
    message = page.locator("#search-status").inner_text()
    assert message.startswith("422 RerankerUnavailableError") and "RAGINDEX_RERANK_MODEL" in message
    assert page.locator("#hits > li").count() == 0


def test_bad_key_shows_401_message(page: Any) -> None:
    page.fill("#api-key", "rgx_not-a-real-key")
    page.fill("#query", QUERY)
    page.click("#search-button")
    page.wait_for_function("() => document.getElementById('search-status').classList.contains('error')")
    text = page.locator("#search-status").inner_text()
    assert text.startswith("401") and "check your API key" in text
    page.click("#tab-documents")
    page.wait_for_function(
        "() => document.getElementById('documents-status').textContent.includes('check your API key')"
    )


def test_rerun_needs_an_admin_key(page: Any) -> None:
    page.fill("#api-key", KEYS["user"])
    page.click("#tab-documents")
    page.wait_for_function("() => document.getElementById('documents-status').textContent.includes('document(s)')")
    page.click("#rerun")
    page.wait_for_function("() => document.getElementById('documents-status').classList.contains('error')")
    assert (
        page.locator("#documents-status").inner_text().startswith("403 PermissionDeniedError: this needs an admin key")
    )


def test_page_and_assets_are_self_contained(served: tuple[str, str]) -> None:
    import httpx

    with httpx.Client(base_url=served[0]) as client:
        html = client.get("/")
        assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in html.headers["content-security-policy"]
        bodies = [html.text]
        for path, kind in (("/page/app.js", "text/javascript"), ("/page/app.css", "text/css")):
            response = client.get(path)
            assert response.status_code == 200 and response.headers["content-type"].startswith(kind)
            bodies.append(response.text)
        assert "/" not in client.get("/openapi.json").json()["paths"]
        sets = client.get("/v1/sets", headers={"Authorization": f"Bearer {served[1]}"})
        assert sets.status_code == 200 and isinstance(sets.json()["sets"], list)
    for body in bodies:
        assert "http://" not in body and "https://" not in body
