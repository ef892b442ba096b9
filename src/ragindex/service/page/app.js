// ragindex retrieval-testing page: plain DOM calls against the /v1 API; every text goes in via textContent.
"use strict";

const KEY_STORAGE = "ragindex.apiKey";
const SET_STORAGE = "ragindex.setId";
const PHASES = ["encode", "search", "fuse", "backfill", "rerank", "total"];
const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, body) {
    super(describeError(status, body));
    this.status = status;
  }
}

function describeError(status, body) {
  const message = (body && (body.message || body.detail)) || "";
  const name = (body && body.error) || "HTTP " + status;
  if (status === 401) return "401 " + name + ": check your API key. " + message;
  if (status === 403) return "403 " + name + ": this needs an admin key. " + message;
  return status + " " + name + ": " + message;
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + $("api-key").value.trim() };
  const init = { method, headers };
  if (body instanceof FormData) {
    init.body = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, { error: "NetworkError", message: String(err) });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_err) {
    data = { message: text };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function setId() {
  return Number.parseInt($("set-id").value, 10);
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function fmt(value) {
  if (typeof value !== "number") return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(1) : value.toFixed(3);
}

function status(id, text, isError) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", Boolean(isError));
}

// ---------------------------------------------------------------- search
function searchBody() {
  const body = { query: $("query").value, set_id: setId(), mode: $("mode").value };
  if (body.mode === "hybrid" && $("fusion").value) body.fusion = $("fusion").value; // "": the server's RAGINDEX_FUSION
  const topK = $("top-k").value.trim();
  if (topK) body.top_k = Number.parseInt(topK, 10);
  const threshold = $("score-threshold").value.trim();
  if (threshold) body.score_threshold = Number.parseFloat(threshold);
  if ($("rerank").checked) body.rerank = true;
  return body;
}

function location_(hit) {
  const parts = [];
  if (hit.page !== null && hit.page !== undefined) parts.push("page " + hit.page);
  if (hit.section) parts.push("section " + hit.section);
  if (hit.start_line !== null && hit.start_line !== undefined) {
    parts.push("lines " + hit.start_line + (hit.end_line !== null && hit.end_line !== hit.start_line ? "–" + hit.end_line : ""));
  }
  return parts.join(" · ");
}

function renderHit(hit) {
  const item = el("li", null, "hit");
  item.dataset.docId = hit.doc_id;
  item.dataset.filename = hit.filename || "";
  const head = el("div", null, "hit-head");
  head.append(el("span", "#" + hit.rank, "rank"), el("span", "score " + fmt(hit.score), "score"));
  head.append(el("span", hit.filename || hit.source || "", "filename"));
  head.append(el("span", location_(hit), "where"));
  item.append(head);
  item.append(el("p", hit.text, "text"));
  const table = el("table", null, "scores");
  table.append(el("caption", "per-source scores"));
  const header = el("tr");
  header.append(el("th", "source"), el("th", "rank"), el("th", "score"));
  table.append(header);
  for (const [source, s] of Object.entries(hit.scores || {})) {
    const row = el("tr");
    row.dataset.source = source;
    row.append(el("td", source), el("td", s.rank === null ? "–" : "#" + s.rank), el("td", fmt(s.score)));
    table.append(row);
  }
  item.append(table);
  return item;
}

function renderLatency(latency) {
  const head = $("latency-head");
  const values = $("latency-values");
  head.replaceChildren();
  values.replaceChildren();
  const names = PHASES.filter((p) => p in latency).concat(Object.keys(latency).filter((p) => !PHASES.includes(p)));
  for (const name of names) {
    const th = el("th", name);
    th.scope = "col";
    head.append(th);
    const td = el("td", latency[name].toFixed(1));
    td.dataset.phase = name;
    values.append(td);
  }
  $("latency").hidden = names.length === 0;
}

async function runSearch(event) {
  event.preventDefault();
  const body = searchBody();
  $("search-button").disabled = true;
  status("search-status", "searching…");
  try {
    const result = await api("POST", "/v1/search", body);
    $("hits").replaceChildren(...result.hits.map(renderHit));
    renderLatency(result.latency_ms || {});
    const n = result.hits.length;
    status("search-status", n + (n === 1 ? " hit" : " hits") + " · mode " + result.mode + " · set " + body.set_id);
  } catch (err) {
    $("hits").replaceChildren();
    $("latency").hidden = true;
    status("search-status", err.message, true);
  } finally {
    $("search-button").disabled = false;
  }
}

// ---------------------------------------------------------------- documents
async function loadDocuments() {
  if (!setId()) return;
  try {
    const data = await api("GET", "/v1/sets/" + setId() + "/documents");
    const rows = data.documents.map((doc) => {
      const row = el("tr");
      row.dataset.docId = doc.doc_id;
      const badge = el("span", doc.status, "badge " + String(doc.status).toLowerCase());
      const statusCell = el("td");
      statusCell.append(badge);
      row.append(el("td", doc.doc_id), el("td", doc.filename), statusCell, el("td", doc.chunk_count));
      row.append(el("td", (doc.updated_at || "").replace("T", " ").slice(0, 19)), el("td", doc.error || "", "error-text"));
      return row;
    });
    $("documents-body").replaceChildren(...rows);
    status("documents-status", rows.length + " document(s) in set " + setId());
  } catch (err) {
    $("documents-body").replaceChildren();
    status("documents-status", err.message, true);
  }
}

async function loadSets() {
  if (!$("api-key").value.trim()) return;
  try {
    const data = await api("GET", "/v1/sets");
    $("set-list").replaceChildren(
      ...data.sets.map((s) => {
        const option = el("option", s.documents + " document(s)");
        option.value = s.set_id;
        return option;
      }),
    );
    $("sets-info").textContent = data.sets.length ? "sets: " + data.sets.map((s) => s.set_id).join(", ") : "no documents yet";
  } catch (err) {
    $("sets-info").textContent = err.status === 401 ? "check your API key" : "";
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForJob(jobId) {
  for (;;) {
    const job = await api("GET", "/v1/jobs/" + encodeURIComponent(jobId));
    if (job.status === "succeeded" || job.status === "failed") return job;
    status("documents-status", "job " + jobId + " " + job.status + "…");
    await sleep(300);
  }
}

async function upload(event) {
  event.preventDefault();
  const input = $("files");
  if (!input.files.length) return;
  const form = new FormData();
  for (const file of input.files) form.append("files", file, file.name);
  $("upload-button").disabled = true;
  try {
    status("documents-status", "uploading " + input.files.length + " file(s)…");
    const accepted = await api("POST", "/v1/sets/" + setId() + "/documents", form);
    const job = await waitForJob(accepted.job_id);
    input.value = "";
    await loadDocuments();
    await loadSets();
    const tail = job.status === "failed" ? ": " + (job.error || "see the documents") : "";
    status("documents-status", "job " + job.job_id + " " + job.status + tail, job.status === "failed");
  } catch (err) {
    status("documents-status", err.message, true);
  } finally {
    $("upload-button").disabled = false;
  }
}

async function rerun() {
  $("rerun").disabled = true;
  try {
    status("documents-status", "repairing…");
    const report = await api("POST", "/v1/repair", {});
    await loadDocuments();
    const indexed = Object.values(report.indexed || {}).reduce((a, b) => a + (Number(b) || 0), 0);
    status("documents-status", "repair " + (report.ok ? "ok" : "incomplete") + " · re-indexed " + indexed + " chunk copies");
  } catch (err) {
    status("documents-status", err.message, true);
  } finally {
    $("rerun").disabled = false;
  }
}

// ---------------------------------------------------------------- wiring
function show(view) {
  const search = view === "search";
  $("search-view").hidden = !search;
  $("documents-view").hidden = search;
  $("tab-search").setAttribute("aria-selected", String(search));
  $("tab-documents").setAttribute("aria-selected", String(!search));
  if (!search) loadDocuments();
}

function init() {
  $("api-key").value = localStorage.getItem(KEY_STORAGE) || "";
  $("set-id").value = localStorage.getItem(SET_STORAGE) || "1";
  $("api-key").addEventListener("input", () => localStorage.setItem(KEY_STORAGE, $("api-key").value.trim()));
  $("api-key").addEventListener("change", loadSets);
  $("set-id").addEventListener("change", () => {
    localStorage.setItem(SET_STORAGE, $("set-id").value);
    if (!$("documents-view").hidden) loadDocuments();
  });
  $("mode").addEventListener("change", () => {
    $("fusion").disabled = $("mode").value !== "hybrid";
  });
  $("search-form").addEventListener("submit", runSearch);
  $("upload-form").addEventListener("submit", upload);
  $("refresh-documents").addEventListener("click", loadDocuments);
  $("rerun").addEventListener("click", rerun);
  $("tab-search").addEventListener("click", () => show("search"));
  $("tab-documents").addEventListener("click", () => show("documents"));
  loadSets();
}

document.addEventListener("DOMContentLoaded", init);
