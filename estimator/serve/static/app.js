// The estimator page: a form whose fields are the API's (the CLI's options), the answer drawn as it comes.
// No library, no build step, no network but this server. Numbers are formatted as the CLI's tables format them
// (estimator/units.py: format_bytes, format_seconds); each shown number keeps the API's value in data-value.
"use strict";

const $ = (id) => document.getElementById(id);
const INFER_FIELDS = ["gpus", "prompt_tokens", "output_tokens", "dtype", "kv_dtype"];
const TRAIN_FIELDS = ["seq_len", "precision", "optimizer", "recompute", "zero", "dp", "tp", "pp", "lora_rank"];
const COMMON_FIELDS = ["model", "gpu", "system", "nodes", "batch", "profile"];
// The answer first: the ranking column ($/h for the goal), how much of the option the goal uses, $/Mtok and the
// times right after the server, so a laptop shows them
// without scrolling sideways; the layout's details after.
const PLAN_COLUMNS = [
  ["rank", "#", "int"], ["system", "system", "text"], ["usd_per_hour", "$/h", "usd"],
  ["goal_use_fraction", "use", "percent"],
  ["usd_per_million_tokens", "$/Mtok", "usd"], ["time_to_first_token_s", "TTFT", "seconds"],
  ["time_per_output_token_s", "TPOT", "seconds"], ["tokens_per_s", "tok/s", "rate"], ["cards", "GPUs", "int"],
  ["layout", "TP×PP×rep", "text"], ["batch_per_replica", "batch", "int"], ["memory_per_gpu_bytes", "mem/GPU", "bytes"],
  ["gpu", "GPU", "text"],
  ["reason", "note", "text"],
];
let planRows = [];
let planSort = { key: "rank", ascending: true };

// --- formatting: the CLI's rules ------------------------------------------------------------------------------
function formatBytes(n) {  // format_bytes(n, binary=False): one decimal in B, kB, MB, GB, TB
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = Number(n);
  for (const unit of units) {
    if (Math.abs(value) < 1000 || unit === "TB") {
      return unit === "B" ? `${value.toFixed(0)} ${unit}` : `${value.toFixed(1)} ${unit}`;
    }
    value /= 1000;
  }
  return "";
}
function formatSeconds(s) {  // format_seconds: µs, ms or s, three significant digits
  if (s < 1e-3) return `${(s * 1e6).toFixed(1)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(1)} ms`;
  return `${s.toFixed(2)} s`;
}
function formatRate(r) { return r.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 }); }
function formatted(kind, value) {
  if (value === null || value === undefined) return "—";
  if (kind === "bytes") return formatBytes(value);
  if (kind === "seconds") return formatSeconds(value);
  if (kind === "rate") return formatRate(value);
  if (kind === "usd") return `$${value.toFixed(2)}`;
  if (kind === "percent") return `${(value * 100).toFixed(value >= 0.1 ? 0 : 1)}%`;
  if (kind === "int") return Number(value).toLocaleString("en-US");
  if (kind === "tokens") return `${Number(value).toLocaleString("en-US")} tok`;
  return String(value);
}
function cell(tag, text, field, value) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (field) { el.dataset.field = field; el.dataset.value = value === null ? "" : String(value); }
  return el;
}

// --- the form ↔ the query string (the share link) -----------------------------------------------------------
function mode() { return document.querySelector("input[name=mode]:checked").value; }
function fields() {
  const names = [...COMMON_FIELDS, ...(mode() === "train" ? TRAIN_FIELDS : INFER_FIELDS)];
  const query = new URLSearchParams();
  for (const name of names) {
    const value = $(name).value.trim();
    if (value !== "" && !(name === "model" && uploaded())) query.set(name, value);
  }
  if (mode() === "train") query.set("mode", "train");
  return query;
}
function fillFrom(query) {
  for (const [name, value] of query) {
    if (name === "mode") {
      const radio = document.querySelector(`input[name=mode][value="${CSS.escape(value)}"]`);
      if (radio) radio.checked = true;
    } else if (name === "concurrency") {
      $("concurrency").value = value;
    } else if ($(name) && $(name).form === $("inputs")) {
      const el = $(name);
      if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === value)) el.add(new Option(value, value));
      el.value = value;
    }
  }
  showMode();
}
function uploaded() { return $("config").value.trim() !== ""; }
function showMode() {
  const training = mode() === "train";
  for (const el of document.querySelectorAll(".train")) el.hidden = !training;
  for (const el of document.querySelectorAll(".infer")) el.hidden = training;
}
function shareLink() {
  const query = fields();
  if ($("concurrency").value.trim()) query.set("concurrency", $("concurrency").value.trim());
  const link = `${location.origin}/?${query}`;
  $("share").href = link;
  return link;
}

// --- calling the API --------------------------------------------------------------------------------------------
async function call(path, query) {
  const options = uploaded()
    ? { method: "POST", body: $("config").value, headers: { "Content-Type": "application/json" } }
    : { method: "GET" };
  const response = await fetch(`${path}?${query}`, options);
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch { body = null; }
  if (!response.ok) {
    const detail = body && Array.isArray(body.detail) ? body.detail : [{ loc: [], msg: text }];
    throw new Error(detail.map((d) => `${(d.loc || []).slice(1).join(".") || "input"}: ${d.msg}`).join("\n"));
  }
  return body;
}
function showError(id, error) {
  $(id).hidden = !error;
  $(id).textContent = error ? String(error.message || error) : "";
}

async function runEstimate() {
  shareLink();
  showError("error", null);
  try {
    const report = await call("/v1/estimate", fields());
    $("result").hidden = false;
    document.body.classList.add("answered");  // a phone shows the answer above the form
    drawReport(report);
  } catch (error) {
    $("result").hidden = true;
    showError("error", error);
  }
}

// --- the answer ---------------------------------------------------------------------------------------------------
function segments(report) {
  const m = report.memory;
  if (report.workload.mode === "train") {
    const other = m.per_gpu_bytes - m.model_states_bytes - m.activation_bytes - m.overhead_bytes;
    return [["model states (weights, gradients, optimizer)", "memory.model_states_bytes", m.model_states_bytes],
      ["activations", "memory.activation_bytes", m.activation_bytes],
      [`other tensors at the peak (${m.peak_phase})`, null, Math.max(other, 0)],
      ["runtime overhead", "memory.overhead_bytes", m.overhead_bytes]];
  }
  return [["weights", "memory.weights_per_gpu_bytes", m.weights_per_gpu_bytes],
    ["KV cache", "memory.kv_cache_per_gpu_bytes", m.kv_cache_per_gpu_bytes],
    ["recurrent state", "memory.state_per_gpu_bytes", m.state_per_gpu_bytes],
    ["activations (prefill peak)", "memory.activation_per_gpu_bytes", m.activation_per_gpu_bytes],
    ["runtime overhead", "memory.overhead_per_gpu_bytes", m.overhead_per_gpu_bytes]];
}

function svg(tag, attributes, text) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}
function drawChart(report) {
  // One bar of the terms per GPU, to scale against the capacity (the dashed line); the legend is HTML, so it
  // reads at a phone's width.
  const m = report.memory;
  const parts = segments(report).map((part, i) => [...part, i]).filter(([, , v]) => v);
  const scale = Math.max(m.per_gpu_bytes, m.capacity_bytes) * 1.04;
  const width = 1000, height = 120;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", preserveAspectRatio: "none",
    "aria-label": `memory per GPU ${formatBytes(m.per_gpu_bytes)} of ${formatBytes(m.capacity_bytes)}` });
  let x = 0;
  for (const [, , value, i] of parts) {
    const w = (value / scale) * width;
    chart.append(svg("rect", { x, y: 10, width: Math.max(w, 1), height: height - 20, class: `seg seg${i}` }));
    x += w;
  }
  const cap = (m.capacity_bytes / scale) * width;
  chart.append(svg("line", { x1: cap, x2: cap, y1: 0, y2: height, class: "capacity",
    "vector-effect": "non-scaling-stroke" }));
  const legend = document.createElement("ul");
  legend.className = "legend";
  for (const [name, , value, i] of parts) {
    const li = document.createElement("li");
    li.append(cell("span", "", null, null), `${name}: ${formatBytes(value)}`);
    li.firstChild.className = `swatch seg${i}`;
    legend.append(li);
  }
  const capacity = cell("li", `capacity (dashed line): ${formatBytes(m.capacity_bytes)}`);
  capacity.className = "capacity-label";
  legend.append(capacity);
  $("memory-chart").replaceChildren(chart, legend);
}

function limits(report) {  // the CLI's "max batch" and "max context" rows: the largest that fit
  const m = report.memory;
  if (report.workload.mode === "train") {
    return [["max micro-batch (this seq len)", "memory.max_batch", m.max_batch, "int"],
      ["longest sequence (this batch)", "memory.max_seq_len", m.max_seq_len, "tokens"]];
  }
  return [["max batch (this context)", "memory.max_batch", m.max_batch, "int"],
    ["max prompt + output (this batch)", "memory.max_context_tokens", m.max_context_tokens, "tokens"]];
}
function drawMemoryTable(report) {
  const m = report.memory;
  const rows = [...segments(report),
    ["total per GPU", "memory.per_gpu_bytes", m.per_gpu_bytes],
    ["usable capacity", "memory.capacity_bytes", m.capacity_bytes],
    ["headroom", "memory.headroom_bytes", m.headroom_bytes]].map((row) => [...row, "bytes"]);
  $("memory-table").tBodies[0].replaceChildren(...[...rows, ...limits(report)].map(([name, field, value, kind]) => {
    const tr = document.createElement("tr");
    tr.append(cell("th", name), cell("td", formatted(kind, value ?? null), field, value ?? null));
    return tr;
  }));
}
function drawFixes(report) { drawFixList("fixes", report.fixes || []); }
function drawFixList(id, fixes) {  // what would fit, best first, each with its memory per GPU
  $(`${id}-box`).hidden = fixes.length === 0;
  $(id).replaceChildren(...fixes.map((f) => {
    const li = document.createElement("li");
    li.append(cell("code", f.change), ": ",
      f.per_gpu_bytes === null ? "—" : formatBytes(f.per_gpu_bytes),
      ` per GPU, ${f.fits ? "fits" : "does not fit"}; cost ${f.cost}: ${f.cost_detail}` +
      (f.time_factor === null ? "" : `, time ×${f.time_factor.toFixed(2)}`));
    return li;
  }));
}

function timeRows(report) {
  const t = report.time;
  if (report.workload.mode === "train") {
    return [["step", t.step_bound_s, t.step_s, "time.step_bound_s", "time.step_s", "seconds", ""],
      ["compute", null, t.compute_s, null, "time.compute_s", "seconds", ""],
      ["optimizer", null, t.optimizer_s, null, "time.optimizer_s", "seconds", ""],
      ["communication", null, t.communication_s, null, "time.communication_s", "seconds", ""],
      ["tokens/s", null, t.tokens_per_s, null, "time.tokens_per_s", "rate", `MFU ${(t.mfu * 100).toFixed(1)}%`]];
  }
  return [["prefill / first token", t.prefill_bound_s, t.prefill_s, "time.prefill_bound_s", "time.prefill_s",
    "seconds", t.prefill_bound],
  ["decode step", t.decode_step_bound_s, t.decode_step_s, "time.decode_step_bound_s", "time.decode_step_s",
    "seconds", t.bound || "—"],
  ["tokens/s (all sequences)", t.tokens_per_s_bound, t.tokens_per_s, "time.tokens_per_s_bound",
    "time.tokens_per_s", "rate", ""]];
}
function drawTimeTable(report) {
  const head = document.createElement("tr");
  const title = report.time.hypothetical ? "time (hypothetical: does not fit)" : "time";
  // the expected time first, beside the phase: on a phone it is the column in view
  head.append(cell("th", title), cell("th", `expected (${report.workload.profile})`), cell("th", "bound (peak)"),
    cell("th", "limited by"));
  $("time-table").tHead.replaceChildren(head);
  $("time-table").tBodies[0].replaceChildren(...timeRows(report).map(([name, bound, expected, bf, ef, kind, why]) => {
    const tr = document.createElement("tr");
    tr.append(cell("th", name), cell("td", formatted(kind, expected), ef, expected),
      cell("td", bound === null ? "" : formatted(kind, bound), bf, bound), cell("td", why));
    return tr;
  }));
}

function drawReport(report) {
  const m = report.memory, g = report.gpu, w = report.workload;
  $("verdict").textContent = m.fits ? "Fits" : "Does not fit";
  $("verdict").className = m.fits ? "fits" : "misses";
  const params = `${(report.model.params / 1e9).toFixed(2)} B params`;
  const where = g.system ? `${g.system} (${g.name})` : g.name;
  $("summary").textContent = `${report.model.name} (${params}) on ${w.gpus} × ${where}: ` +
    `${formatBytes(m.per_gpu_bytes)} per GPU of ${formatBytes(m.capacity_bytes)}` +
    (m.gpus_required && !m.fits ? `; needs ${m.gpus_required} GPUs` : "") + ".";
  drawFixes(report);
  drawChart(report);
  drawMemoryTable(report);
  drawTimeTable(report);
  const words = (notes) => notes.map((n) => { const li = document.createElement("li"); li.textContent = n.text; return li; });
  $("warnings").replaceChildren(...(report.warnings.length ? words(report.warnings) : [cell("li", "none")]));
  $("assumptions").replaceChildren(...words(report.assumptions));
}

// --- the plan table: sortable, filterable, downloadable ------------------------------------------------------------
function planQuery(extra) {
  const query = new URLSearchParams();
  for (const name of ["model", "dtype", "kv_dtype", "prompt_tokens", "output_tokens", "profile"]) {
    const value = $(name).value.trim();
    if (value !== "" && !(name === "model" && uploaded())) query.set(name, value);
  }
  if ($("plan-only").checked && $("gpu").value) query.set("gpu", $("gpu").value);
  if ($("plan-only").checked && $("system").value) query.set("systems", $("system").value);
  query.set("concurrency", $("concurrency").value.trim() || "32");
  for (const [k, v] of Object.entries(extra || {})) query.set(k, v);
  return query;
}
async function runPlan() {
  shareLink();
  showError("plan-error", null);
  try {
    const report = await call("/v1/plan", planQuery());
    planRows = report.options.map((o) => ({ ...o, layout: o.cards === null ? "" :
      `${o.tensor_parallel}×${o.pipeline_parallel}×${o.replicas}` }));
    drawPlan();
    drawFixList("plan-fixes", report.fixes || []);  // no server holds the model: what would let one
    $("plan-table").hidden = false;
    $("plan-downloads").hidden = false;
    $("plan-csv").href = `/v1/plan?${planQuery({ format: "csv" })}`;
    $("plan-xlsx").href = `/v1/plan?${planQuery({ format: "xlsx" })}`;
  } catch (error) {
    showError("plan-error", error);
  }
}
function drawPlan() {
  const head = document.createElement("tr");
  for (const [key, title] of PLAN_COLUMNS) {
    const th = cell("th", title + (planSort.key === key ? (planSort.ascending ? " ▲" : " ▼") : ""));
    th.dataset.key = key;
    th.tabIndex = 0;
    th.setAttribute("aria-sort", planSort.key === key ? (planSort.ascending ? "ascending" : "descending") : "none");
    head.append(th);
  }
  $("plan-table").tHead.replaceChildren(head);
  const filter = $("plan-filter").value.trim().toLowerCase();
  const shown = planRows.filter((r) => !filter || PLAN_COLUMNS.some(([k]) => String(r[k] ?? "").toLowerCase().includes(filter))
    || (filter === "feasible" && r.feasible));
  const { key, ascending } = planSort;
  shown.sort((a, b) => {
    const x = a[key], y = b[key];
    if (x === y) return 0;
    if (x === null || x === undefined || x === 0 && key === "rank") return 1;
    if (y === null || y === undefined || y === 0 && key === "rank") return -1;
    return (x < y ? -1 : 1) * (ascending ? 1 : -1);
  });
  $("plan-table").tBodies[0].replaceChildren(...shown.map((r) => {
    const tr = document.createElement("tr");
    if (!r.feasible) tr.className = "infeasible";
    for (const [k, , kind] of PLAN_COLUMNS) tr.append(cell("td", formatted(kind, r[k] ?? null), `plan.${k}`, r[k] ?? null));
    return tr;
  }));
}
function sortPlan(event) {
  const th = event.target.closest("th");
  if (!th || !th.dataset.key) return;
  planSort = { key: th.dataset.key, ascending: planSort.key === th.dataset.key ? !planSort.ascending : true };
  drawPlan();
}
async function download(event) {
  if (!uploaded()) return;  // a catalog model: the link itself downloads
  event.preventDefault();
  const format = event.target.id === "plan-csv" ? "csv" : "xlsx";
  const response = await fetch(`/v1/plan?${planQuery({ format })}`, { method: "POST", body: $("config").value });
  if (!response.ok) { showError("plan-error", new Error(await response.text())); return; }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = `plan.${format}`;
  link.click();
  URL.revokeObjectURL(link.href);
}

// --- start: the catalogs, the choices, the share link's inputs ----------------------------------------------------
async function loadChoices() {
  const [gpus, systems, models, formats, schema] = await Promise.all(
    ["/v1/gpus", "/v1/systems", "/v1/models", "/v1/formats", "/openapi.json"].map((u) => fetch(u).then((r) => r.json())));
  for (const g of gpus) $("gpu").add(new Option(`${g.name}${g.aliases.length ? ` (${g.aliases[0]})` : ""}`, g.aliases[0] || g.name));
  for (const s of systems) $("system").add(new Option(`${s.name}: ${s.gpus_per_node} × ${s.gpu_name}`, s.name));
  $("model-list").replaceChildren(...models.map((m) => new Option(`${(m.params / 1e9).toFixed(1)} B, ${m.model_type}`, m.name)));
  for (const f of formats) {
    $("dtype").add(new Option(f.name, f.name));
    if (f.kv_cache) $("kv_dtype").add(new Option(f.name, f.name));
  }
  const parameters = schema.paths["/v1/estimate"].get.parameters;
  for (const select of document.querySelectorAll("select[data-enum]")) {
    const field = parameters.find((p) => p.name === select.name);
    for (const value of (field && field.schema.enum) || []) {
      if (![...select.options].some((o) => o.textContent === value)) select.add(new Option(value, value));
    }
  }
}
function readConfigFile(file) {
  if (!file) return;
  file.text().then((text) => { $("config").value = text; $("config-box").open = true; configChanged(); });
}
function configChanged() {
  $("config-status").textContent = uploaded()
    ? "Using the pasted config.json instead of the name (a pasted config is not in the share link)."
    : "A pasted config.json is used instead of the name (and is not in the share link).";
}

async function start() {
  document.body.classList.add("loading");
  try {
    await loadChoices();
  } catch (error) {
    showError("error", new Error(`the catalogs did not load: ${error}`));
  }
  const query = new URLSearchParams(location.search);
  fillFrom(query);
  $("inputs").addEventListener("submit", (e) => { e.preventDefault(); runEstimate(); });
  $("inputs").addEventListener("change", () => { showMode(); shareLink(); });
  $("plan-run").addEventListener("click", runPlan);
  $("plan-filter").addEventListener("input", drawPlan);
  $("plan-table").addEventListener("click", sortPlan);
  $("plan-table").addEventListener("keydown", (e) => { if (e.key === "Enter") sortPlan(e); });
  $("plan-csv").addEventListener("click", download);
  $("plan-xlsx").addEventListener("click", download);
  $("config").addEventListener("input", configChanged);
  $("config-file").addEventListener("change", (e) => readConfigFile(e.target.files[0]));
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => { e.preventDefault(); readConfigFile(e.dataTransfer.files[0]); });
  shareLink();
  if (query.get("model")) {
    await runEstimate();
    if (query.get("concurrency")) await runPlan();
  }
  document.body.classList.remove("loading");
  document.body.dataset.ready = "true";  // the browser test waits for this
}
start();
