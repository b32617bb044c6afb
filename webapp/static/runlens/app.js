// runlens front end: charts from json_script data, live status, uploads with progress,
// and the source-line panel. No inline scripts anywhere (the CSP forbids them).
"use strict";

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  if (input) return input.value;
  const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

// ---- charts ---------------------------------------------------------------------------
function drawCharts() {
  if (!window.Plotly) return;
  document.querySelectorAll("[data-figure]").forEach((el) => {
    const data = document.getElementById(el.dataset.figure);
    if (!data) return;
    const fig = JSON.parse(data.textContent);
    // Nothing leaves the server: no "edit in Chart Studio", no send-to-cloud, no link to plot.ly.
    const config = { responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
                     showEditInChartStudio: false, plotlyServerURL: "", linkText: "",
                     toImageButtonOptions: { filename: el.id || "runlens-chart", scale: 2 } };
    window.Plotly.newPlot(el, fig.data, fig.layout, config).then(() => {
      el.on("plotly_click", (ev) => {
        const point = ev.points && ev.points[0];
        const where = point && point.customdata;
        if (point && point.data.meta === "notes") return;  // a note's marker: linkNotes handles it
        // Trend points carry their run's page as customdata[0]: a click opens it.
        if (el.dataset.clickRuns === "1") {
          if (Array.isArray(where) && typeof where[0] === "string" && /^\/runs\/\d+\/$/.test(where[0])) {
            window.location.assign(where[0]);
          }
          return;
        }
        // A point whose customdata is [logfile, line] opens that log line in the source panel.
        const panel = document.getElementById("source-panel");
        if (panel && panel.openLine && Array.isArray(where) && where[0] && where[1]) panel.openLine(where[0], where[1]);
      });
      if (el.dataset.notes) linkNotes(el);
      linkZoom(el);
    });
  });
}

// Anchored notes: dragging across windows fills the note form's window range; a note's marker
// scrolls to its text, and a note's "window" link highlights its marker.
function linkNotes(el) {
  const from = document.getElementById("id_window_from");
  const to = document.getElementById("id_window_to");
  el.on("plotly_selected", (ev) => {
    if (!ev || !ev.range || !ev.range.x || !from || !to) return;
    from.value = Math.max(0, Math.round(Math.min(...ev.range.x)));
    to.value = Math.max(0, Math.round(Math.max(...ev.range.x)));
    const kind = document.getElementById("id_kind");
    if (kind) kind.value = "note";
    document.getElementById("annotate-form").scrollIntoView({ block: "center" });
    document.getElementById("id_body").focus();
  });
  el.on("plotly_click", (ev) => {
    const point = ev && ev.points && ev.points.find((p) => p.data.meta === "notes");
    if (!point) return;
    const note = document.getElementById(`note-${point.customdata}`);
    if (note) { note.scrollIntoView({ block: "center" }); note.classList.add("flash"); }
  });
}

// A chart zoomed by hand fills the zoom form's window range (the page then reads every row of
// those windows instead of the thinned series; the server caps the range).
function linkZoom(el) {
  const from = document.getElementById("zoom-from");
  const to = document.getElementById("zoom-to");
  if (!from || !to) return;
  el.on("plotly_relayout", (ev) => {
    const low = ev && ev["xaxis.range[0]"];
    const high = ev && ev["xaxis.range[1]"];
    if (low === undefined || high === undefined) return;
    from.value = Math.max(1, Math.floor(Number(low)));
    to.value = Math.max(1, Math.ceil(Number(high)));
  });
}

// ---- live status ----------------------------------------------------------------------
function pollStatus(ids, onChange) {
  let delay = 1000;
  const tick = async () => {
    try {
      const r = await fetch(`/runs/status.json?ids=${ids.join(",")}`, { headers: { Accept: "application/json" } });
      if (r.ok) {
        const body = await r.json();
        onChange(body.runs);
        if (!body.runs.some((run) => run.busy)) return;
      }
    } catch (e) { /* the server restarted: keep trying, a little slower */ }
    delay = Math.min(delay * 1.5, 5000);
    setTimeout(tick, delay);
  };
  setTimeout(tick, delay);
}

// ---- figures ----------------------------------------------------------------------------
// One formatting of a figure, the same as runs/display.py (tests/browser/test_figures_browser.py
// checks they agree): the value's shortest decimal form rounded half away from zero to the places
// of its kind. Number.toFixed rounds the binary value (94.05 -> "94.0") where the server said 94.1.
const FIGURE_PLACES = { tok_s: 1, ms: 2, tokens: 2, pct: 1, p: 2, gbs: 2 };
const FIGURE_KINDS = {
  throughput_tok_s: "tok_s", tokens_per_cycle: "tokens", cycle_ms: "ms", verify_ms: "ms",
  verify_pct: "pct", ms: "ms", pct: "pct",
};
const FIGURE_DEFAULT_PLACES = 2;

function figurePlaces(kind) {
  if (typeof kind === "number") return kind;
  if (/^\d+$/.test(kind)) return Number(kind);
  if (kind.startsWith("phase:")) return FIGURE_PLACES.ms;
  kind = kind.replace(/^metric:/, "");
  const places = FIGURE_PLACES[FIGURE_KINDS[kind] || kind];
  return places === undefined ? FIGURE_DEFAULT_PLACES : places;
}

function figure(value, kind) {
  if (value === null || value === undefined || value === "" || typeof value === "boolean") return "—";
  const v = Number(value);
  if (!Number.isFinite(v)) return "—";
  const places = figurePlaces(kind);
  // toExponential() without digits gives the shortest digits that read back as v (like Python's repr).
  const [mantissa, exponent] = Math.abs(v).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const point = Number(exponent) + 1; // digits before the decimal point
  const whole = point > 0 ? digits.slice(0, point).padEnd(point, "0") : "0";
  const frac = (point > 0 ? digits.slice(point) : "0".repeat(-point) + digits).padEnd(places + 1, "0");
  let n = BigInt(whole + frac.slice(0, places));
  if (frac[places] >= "5") n += 1n;
  const s = n.toString().padStart(places + 1, "0");
  const text = places ? `${s.slice(0, s.length - places)}.${s.slice(s.length - places)}` : s;
  return v < 0 && n !== 0n ? `-${text}` : text;
}

function watchRunList() {
  const table = document.getElementById("run-table");
  if (!table || !table.dataset.busy) return;
  const ids = table.dataset.busy.split(",").filter(Boolean);
  if (!ids.length) return;
  pollStatus(ids, (runs) => {
    runs.forEach((run) => {
      const row = table.querySelector(`tr[data-run="${run.id}"]`);
      if (!row) return;
      const status = row.querySelector("[data-field=status]");
      status.textContent = run.status;
      status.className = `status ${run.status}`;
      // Every column and badge the server renders in a row (templates/runs/run_list.html).
      const field = (f) => row.querySelector(`[data-field=${f}]`);
      const set = (f, v) => { const c = field(f); if (c) c.textContent = v; };
      const show = (f, on) => { const c = field(f); if (c) c.hidden = !on; };
      ["throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms"].forEach((f) => set(f, figure(run[f], f)));
      set("steps", run.steps === null || run.steps === undefined ? "—" : run.steps);
      set("throughput_scope", run.throughput_scope || "");
      show("throughput_scope", Boolean(run.throughput_scope));
      show("nccl_drift", run.nccl_status === "drift");
      show("person_conflict", Boolean(run.person_conflict));
      set("launches_count", run.launches_count || 0);
      show("launches", (run.launches_count || 0) >= 2);
      set("failed_files", run.failed_files || 0);
      show("failed", (run.failed_files || 0) > 0 && run.status !== "failed");
      if (field("failed")) field("failed").title = run.error || "";
    });
  });
}

function watchRunDetail() {
  const badge = document.getElementById("run-status");
  if (!badge || badge.dataset.busy !== "1") return;
  pollStatus([badge.dataset.run], (runs) => {
    const run = runs[0];
    if (!run) return;
    badge.textContent = run.status;
    badge.className = `status big ${run.status}`;
    // The page's tables and charts come from the server: reload once the parse has ended.
    if (!run.busy) window.location.reload();
  });
}

// ---- upload ---------------------------------------------------------------------------
function setupUpload() {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const input = document.getElementById("id_files");
  const zone = document.getElementById("dropzone");
  const list = document.getElementById("file-list");
  const bar = document.getElementById("upload-progress");
  const state = document.getElementById("upload-state");
  const error = document.getElementById("upload-error");
  const submit = document.getElementById("upload-submit");

  const showFiles = () => {
    list.replaceChildren(...Array.from(input.files).map((f) => {
      const li = document.createElement("li");
      li.textContent = `${f.name} (${(f.size / 1024).toFixed(1)} KiB)`;
      return li;
    }));
  };
  input.addEventListener("change", showFiles);
  ["dragenter", "dragover"].forEach((ev) => zone.addEventListener(ev, (e) => {
    e.preventDefault(); zone.classList.add("over");
  }));
  ["dragleave", "drop"].forEach((ev) => zone.addEventListener(ev, (e) => {
    e.preventDefault(); zone.classList.remove("over");
  }));
  zone.addEventListener("drop", (e) => {
    if (e.dataTransfer && e.dataTransfer.files.length) {
      input.files = e.dataTransfer.files;
      showFiles();
    }
  });

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!input.files.length) { error.textContent = "Choose at least one log file."; error.hidden = false; return; }
    error.hidden = true;
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    bar.hidden = false; bar.value = 0; submit.disabled = true;
    xhr.upload.addEventListener("progress", (ev) => {
      if (ev.lengthComputable) {
        bar.value = Math.round((100 * ev.loaded) / ev.total);
        state.textContent = `Uploading… ${bar.value}%`;
      }
    });
    xhr.addEventListener("load", () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = {}; }
      if ((xhr.status === 202 || xhr.status === 200) && body.url) {
        // 200: the same content is already a run of that project (the API answers the same).
        state.textContent = xhr.status === 200 ? "Uploaded before: opening that run…" : "Uploaded. Parsing…";
        window.location.assign(body.url);
      } else {
        submit.disabled = false; bar.hidden = true; state.textContent = "";
        error.textContent = (body.error && body.error.message) || `Upload failed (HTTP ${xhr.status}).`;
        error.hidden = false;
      }
    });
    xhr.addEventListener("error", () => {
      submit.disabled = false; bar.hidden = true;
      error.textContent = "The upload was interrupted (network error)."; error.hidden = false;
    });
    xhr.send(new FormData(form));
  });
}

// ---- provenance: show the log lines a figure came from ---------------------------------
function setupSources() {
  const panel = document.getElementById("source-panel");
  if (!panel) return;
  const title = document.getElementById("source-title");
  const pre = document.getElementById("source-lines");
  document.getElementById("source-close").addEventListener("click", () => { panel.hidden = true; });
  // The lines of one file or several ([{name, lines, marked, notes}]), each file under its name.
  const show = (heading, groups) => {
    title.textContent = heading;
    const rows = [];
    groups.forEach((g) => {
      if (groups.length > 1) {
        const head = document.createElement("div");
        head.className = "file"; head.textContent = `── ${g.name}`;
        rows.push(head);
      }
      g.lines.forEach((l) => {
        const row = document.createElement("div");
        row.className = g.marked.has(l.line) ? "hit" : "";
        row.dataset.line = l.line;
        const no = document.createElement("span");
        no.className = "ln"; no.textContent = String(l.line).padStart(6, " ") + "  ";
        const note = g.notes && g.notes.get(l.line);
        row.append(no);
        if (note) { const v = document.createElement("span"); v.className = "val"; v.textContent = note + "  "; row.append(v); }
        row.append(document.createTextNode(l.text));
        rows.push(row);
      });
    });
    pre.replaceChildren(...rows);
    panel.hidden = false;
  };
  const fail = () => { pre.textContent = "The log cannot be read."; panel.hidden = false; };
  // One log line with a few lines around it.
  const openLine = async (logfile, line) => {
    const r = await fetch(`/ingest/logfiles/${logfile}/lines?start=${Math.max(1, line - 3)}&end=${line + 3}`);
    if (!r.ok) return fail();
    const body = await r.json();
    show(`${body.name}, line ${line}`, [{ name: body.name, lines: body.lines, marked: new Set([line]) }]);
  };
  // A median over windows: every window's line in every file behind it, each with its value; the
  // middle window marked, or the two middle ones when the count is even (the median is their mean).
  const openFigure = async (run, key) => {
    const r = await fetch(`/runs/${run}/figure.json?key=${encodeURIComponent(key)}`);
    if (!r.ok) return fail();
    const fig = await r.json();
    const groups = [];
    for (const f of fig.files) {
      const mine = fig.windows.filter((w) => w.logfile === f.logfile);
      if (!mine.length) continue;
      const lr = await fetch(`/ingest/logfiles/${f.logfile}/lines?at=${mine.map((w) => w.line).join(",")}`);
      if (!lr.ok) return fail();
      const body = await lr.json();
      groups.push({
        name: body.name, lines: body.lines,
        marked: new Set(fig.middle.filter((m) => m.logfile === f.logfile).map((m) => m.line)),
        notes: new Map(mine.map((w) => [w.line, `w${w.window} = ${figure(w.value, key)}`])),
      });
    }
    const several = fig.files.length > 1;
    const name = (id) => (fig.files.find((f) => f.logfile === id) || {}).name;
    const at = (m) => `${figure(m.value, key)} at line ${m.line}${several ? ` of ${name(m.logfile)}` : ""}`;
    const middle = fig.middle.length === 2
      ? `the mean of the two middle windows, ${at(fig.middle[0])} and ${at(fig.middle[1])}`
      : `the middle window, ${at(fig.middle[0])}`;
    const more = fig.total > fig.windows.length ? ` (the first ${fig.windows.length} listed)` : "";
    show(`${fig.files.map((f) => f.name).join(" + ")}: ${fig.total} windows${several ? ` in ${fig.files.length} files` : ""}`
         + `${more}; median ${figure(fig.figure, key)}: ${middle}`, groups);
  };
  panel.openLine = openLine;
  document.addEventListener("click", async (e) => {
    const a = e.target.closest("a.src");
    if (!a) return;
    e.preventDefault();
    if (a.dataset.figure) return openFigure(a.dataset.run, a.dataset.figure);
    return openLine(a.dataset.logfile, Number(a.dataset.line));
  });
}

function setupForms() {
  document.querySelectorAll("select.autosubmit").forEach((s) => s.addEventListener("change", () => s.form.submit()));
  const form = document.getElementById("compare-form");
  if (!form) return;
  // Keep the order in which runs were ticked: the first one is the baseline.
  const picked = [];
  form.addEventListener("change", (e) => {
    if (e.target.name !== "run") return;
    const i = picked.indexOf(e.target.value);
    if (e.target.checked && i < 0) picked.push(e.target.value);
    if (!e.target.checked && i >= 0) picked.splice(i, 1);
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (picked.length < 1) return;
    // "Sweep selected" posts to its own formaction; a sweep has no baseline run to name.
    // (formAction without the attribute is the page's own URL, not the form's action.)
    const action = e.submitter && e.submitter.hasAttribute("formaction") ? e.submitter.formAction : form.action;
    const sweep = e.submitter && e.submitter.id === "sweep-button";
    window.location.assign(`${action}?runs=${picked.join(",")}${sweep ? "" : `&baseline=${picked[0]}`}`);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupForms();
  setupUpload();
  setupSources();
  watchRunList();
  watchRunDetail();
});
window.addEventListener("load", drawCharts);
