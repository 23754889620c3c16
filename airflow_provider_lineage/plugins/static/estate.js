/* The estate page: lineage across every DAG and back in time (plain JS, dagre for the layout).
   One graph request per view (several start nodes at once when expanding), the impact list on demand,
   the run picker filled on first use: an open page costs few api-server connections. */
(function () {
  "use strict";
  var ROW = 18, HEAD = 24, W = 250;
  var state = { starts: [], level: "column", graph: null, diff: null, impact: null };
  var api = window.estate = { state: state, timings: {} };
  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function sv(tag, attrs, text) {
    var n = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function enc(s) { return encodeURIComponent(s); }
  function setState(s) {
    if (s === "ready") api.timings.readyMs = performance.now();  // since navigation start
    document.body.setAttribute("data-state", s);
  }
  function notice(text) { var n = $("notices"); n.textContent = ""; if (text) n.appendChild(el("div", { "class": "notice error" }, text)); }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (data) {
        if (!r.ok) throw new Error(r.status + ": " + (data && data.detail ? JSON.stringify(data.detail) : r.statusText));
        return data;
      });
    });
  }
  function asOf() { return $("as-of").value.trim(); }
  function startParams() {
    return state.starts.map(function (s) { return "namespace=" + enc(s.namespace) + "&name=" + enc(s.name) + "&column=" + enc(s.column || ""); }).join("&");
  }
  function impactQuery(fmt) {
    var s = state.starts[0];
    if (!s) return "#";
    var q = "api/impact?namespace=" + enc(s.namespace) + "&name=" + enc(s.name) + "&column=" + enc(s.column || "") +
      "&direction=" + enc($("direction").value) + "&depth=" + enc($("impact-depth").value) + "&format=" + fmt;
    return asOf() ? q + "&as_of=" + enc(asOf()) : q;
  }
  function syncUrl() {
    var s = state.starts[0];
    if (!s) return;
    var q = "?namespace=" + enc(s.namespace) + "&name=" + enc(s.name) + "&column=" + enc(s.column || "") +
      ($("depth").value !== "1" ? "&depth=" + enc($("depth").value) : "") +
      (asOf() ? "&as_of=" + enc(asOf()) : "") + ($("before").value.trim() ? "&before=" + enc($("before").value.trim()) : "");
    history.replaceState(null, "", q);
  }

  function load() {
    if (!state.starts.length) return Promise.resolve();
    document.body.classList.remove("at-start");
    setState("loading");
    $("export-csv").href = impactQuery("csv");
    $("export-json").href = impactQuery("json");
    syncUrl();
    var t0 = performance.now();
    var url = "api/estate/graph?" + startParams() + "&depth=" + enc($("depth").value) + (asOf() ? "&as_of=" + enc(asOf()) : "");
    var before = $("before").value.trim();
    var jobs = [getJSON(url)];
    if (before) {
      var s = state.starts[0];
      jobs.push(getJSON("api/estate/diff?namespace=" + enc(s.namespace) + "&name=" + enc(s.name) + "&column=" + enc(s.column || "") +
        "&depth=" + enc($("depth").value) + "&before=" + enc(before) + (asOf() ? "&after=" + enc(asOf()) : "")));
    }
    return Promise.all(jobs).then(function (out) {
      api.timings.fetchMs = performance.now() - t0;
      state.graph = out[0]; state.diff = out[1] || null;
      notice(out[0].missing && out[0].missing.length ? "Not in the lineage of any readable DAG: " + out[0].missing.join(", ") : "");
      var t1 = performance.now();
      render(); renderEdges(); renderDiff();
      if (!state.impact) {
        var first = state.starts[0], ph = $("impact");
        ph.textContent = "";
        ph.appendChild(el("p", { "class": "placeholder" }, "List: what " + first.name.split("/").pop() +
          (first.column ? "." + first.column : "") + " feeds (or, upstream, what feeds it)."));
      }
      api.timings.drawMs = performance.now() - t1;
      setState("ready");
    }).catch(function (err) { notice(String(err.message || err)); setState("error"); });
  }

  function added() {
    var a = { ds: {}, col: {}, edge: {} };
    if (!state.diff) return a;
    state.diff.added.datasets.forEach(function (d) { a.ds[d] = true; });
    state.diff.added.columns.forEach(function (c) { a.col[c.dataset + "#" + c.column] = true; });
    state.diff.added.edges.forEach(function (e) { a.edge[[e.source, e.source_field, e.target, e.target_field].join("|")] = true; });
    return a;
  }

  function render() {
    var g = state.graph, svg = $("graph"), news = added();
    svg.textContent = "";
    var layout = new dagre.graphlib.Graph();
    layout.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 90, marginx: 16, marginy: 16 });
    layout.setDefaultEdgeLabel(function () { return {}; });
    var shown = {};
    g.datasets.forEach(function (d) {
      var used = {};
      g.edges.forEach(function (e) { if (e.source === d.id) used[e.source_field] = 1; if (e.target === d.id) used[e.target_field] = 1; });
      state.starts.forEach(function (s) { if (s.namespace + ":" + s.name === d.id && s.column) used[s.column] = 1; });
      var rows = state.level === "column" ? d.fields.filter(function (f) { return used[f.name]; }) : [];
      if (state.level === "column" && !rows.length) rows = d.fields.slice(0, 6);
      shown[d.id] = rows;
      layout.setNode(d.id, { width: W, height: HEAD + rows.length * ROW + 22 });
    });
    (state.level === "column" ? g.edges : g.dataset_edges).forEach(function (e) { if (e.source !== e.target) layout.setEdge(e.source, e.target); });
    dagre.layout(layout);
    var gi = layout.graph();
    svg.setAttribute("width", Math.max(gi.width || 0, 400)); svg.setAttribute("height", Math.max(gi.height || 0, 200));
    var edgesLayer = sv("g", {}); svg.appendChild(edgesLayer);
    var pos = {};
    g.datasets.forEach(function (d) {
      var n = layout.node(d.id), x = n.x - n.width / 2, y = n.y - n.height / 2;
      var box = sv("g", { "class": "box" + (d.start ? " start" : "") + (news.ds[d.id] ? " added" : ""), "data-id": d.id, transform: "translate(" + x + "," + y + ")" });
      box.appendChild(sv("rect", { "class": "frame", width: W, height: n.height }));
      box.appendChild(sv("rect", { "class": "head", width: W, height: HEAD }));
      var title = sv("text", { "class": "title", x: 8, y: HEAD / 2 }, d.label);
      title.appendChild(sv("title", {}, d.id + "\nclick: expand around this dataset"));
      title.addEventListener("click", function () { expand({ namespace: d.namespace, name: d.name, column: "" }); });
      box.appendChild(title);
      pos[d.id] = { x: x, y: y, rows: {} };
      shown[d.id].forEach(function (f, i) {
        var ry = HEAD + i * ROW;
        var row = sv("g", { "class": "row" + (news.col[d.id + "#" + f.name] ? " added" : ""), "data-column": f.name });
        row.appendChild(sv("rect", { x: 0, y: ry, width: W, height: ROW }));
        row.appendChild(sv("text", { x: 10, y: ry + ROW / 2 }, f.name));
        row.appendChild(sv("text", { "class": "type", x: W - 8, y: ry + ROW / 2, "text-anchor": "end" }, f.type));
        row.addEventListener("click", function () { expand({ namespace: d.namespace, name: d.name, column: f.name }); });
        box.appendChild(row);
        pos[d.id].rows[f.name] = ry + ROW / 2;
      });
      var fy = n.height - 9, fx = 8;
      function badge(cls, text, tip, onClick) {
        var b = sv("g", { "class": cls }); var t = sv("text", { x: fx, y: fy }, text);
        t.appendChild(sv("title", {}, tip)); b.appendChild(t); box.appendChild(b);
        if (onClick) b.addEventListener("click", onClick);
        fx += text.length * 6.5 + 10;
      }
      var open = function () { expand({ namespace: d.namespace, name: d.name, column: "" }); };
      if (d.more_up) badge("more-btn more-up", "+" + d.more_up + " up", "more upstream: click to expand", open);
      if (d.more_down) badge("more-btn more-down", "+" + d.more_down + " down", "more downstream: click to expand", open);
      if (d.hidden_up + d.hidden_down) badge("hidden-count", (d.hidden_up + d.hidden_down) + " hidden", "reachable only through DAGs you may not read");
      svg.appendChild(box);
    });
    function yOf(id, col) { var p = pos[id]; return p.y + (p.rows[col] !== undefined ? p.rows[col] : HEAD / 2); }
    var list = state.level === "column" ? g.edges : g.dataset_edges;
    list.forEach(function (e) {
      if (!pos[e.source] || !pos[e.target]) return;
      var x1 = pos[e.source].x + W, y1 = yOf(e.source, e.source_field), x2 = pos[e.target].x, y2 = yOf(e.target, e.target_field);
      var mid = (x1 + x2) / 2;
      var key = [e.source, e.source_field, e.target, e.target_field].join("|");
      var cls = "edge" + (e.type === "INDIRECT" ? " indirect" : "") + (e.masking ? " masked" : "") + (state.level === "table" ? " dataset-edge" : "") + (news.edge[key] ? " added" : "");
      var path = sv("path", { "class": cls, d: "M" + x1 + "," + y1 + " C" + mid + "," + y1 + " " + mid + "," + y2 + " " + x2 + "," + y2,
        "data-source": e.source, "data-target": e.target, "data-dag": e.dag_id, "data-task": e.task_id });
      path.appendChild(sv("title", {}, e.dag_id + " / " + e.task_id + (e.type ? " " + e.type + (e.subtype ? "/" + e.subtype : "") : "") +
        "\nlast run " + (e.last_run.end || "") + " " + (e.last_run.state || "")));
      edgesLayer.appendChild(path);
    });
  }

  function renderEdges() {
    var host = $("edges"); host.textContent = "";
    var t = el("table"); var h = el("tr");
    ["From", "To", "DAG / task", "Last run"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
    t.appendChild(h);
    var list = state.level === "column" ? state.graph.edges : state.graph.dataset_edges;
    list.forEach(function (e) {
      var tr = el("tr", { "class": "edge-row" });
      tr.appendChild(el("td", {}, e.source.split("/").pop() + (e.source_field ? "." + e.source_field : "")));
      tr.appendChild(el("td", {}, e.target.split("/").pop() + (e.target_field ? "." + e.target_field : (state.level === "column" ? " (all)" : ""))));
      var who = el("td"); var a = el("a", { href: e.url, target: "_top" }, e.dag_id + " / " + e.task_id); who.appendChild(a); tr.appendChild(who);
      tr.appendChild(el("td", { "class": "state-" + (e.last_run.state || "") }, (e.last_run.end || "").replace("T", " ").slice(0, 19) + " " + (e.last_run.state || "")));
      t.appendChild(tr);
    });
    if (state.graph.hidden) { var r = el("tr"); r.appendChild(el("td", { colspan: 4, "class": "hidden-total" }, state.graph.hidden + " hidden (DAGs you may not read)")); t.appendChild(r); }
    host.appendChild(t);
  }

  function renderDiff() {
    var host = $("diff"); host.textContent = "";
    if (!state.diff) { host.hidden = true; return; }
    host.hidden = false;
    host.appendChild(el("h4", {}, "Changes since " + state.diff.before));
    var ul = el("ul");
    ["added", "removed"].forEach(function (kind) {
      var d = state.diff[kind];
      d.datasets.forEach(function (x) { ul.appendChild(el("li", { "class": kind }, kind + " dataset " + x)); });
      d.columns.forEach(function (x) { ul.appendChild(el("li", { "class": kind }, kind + " column " + x.dataset + " " + x.column)); });
      d.edges.forEach(function (x) { ul.appendChild(el("li", { "class": kind }, kind + " edge " + x.source.split("/").pop() + "." + x.source_field + " \u2192 " + x.target.split("/").pop() + "." + x.target_field + " (" + x.dag_id + ")")); });
    });
    if (!ul.childNodes.length) ul.appendChild(el("li", {}, "no change"));
    host.appendChild(ul);
  }

  function impact() {
    setState("loading");
    return getJSON(impactQuery("json")).then(function (data) {
      state.impact = data;
      var host = $("impact"); host.textContent = "";
      var t = el("table", { id: "impact-table" }); var h = el("tr");
      ["Depth", "Column", "DAG / task", "Types", "Masked"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
      t.appendChild(h);
      data.rows.forEach(function (r) {
        var tr = el("tr", { "class": "impact-row", title: r.path });
        [r.depth, r.name.split("/").pop() + (r.column ? "." + r.column : " (all)"), r.dag_id + " / " + r.task_id, r.types, r.masked ? "yes" : "no"]
          .forEach(function (v) { tr.appendChild(el("td", {}, v)); });
        t.appendChild(tr);
      });
      host.appendChild(t);
      if (data.hidden) host.appendChild(el("p", { "class": "hidden-total" }, data.hidden + " more hidden (DAGs you may not read)"));
      setState("ready");
    }).catch(function (err) { notice(String(err.message || err)); setState("error"); });
  }

  function expand(node) {
    var key = node.namespace + ":" + node.name + "#" + (node.column || "");
    if (!state.starts.some(function (s) { return s.namespace + ":" + s.name + "#" + (s.column || "") === key; })) state.starts.push(node);
    return load();
  }
  function open(node) { state.starts = [node]; return load(); }

  // Search as you type: debounced, one request at a time (a newer one aborts the older), at most SEARCH_LIMIT
  // hits; the results float under the box (nothing below moves). Enter searches at once or opens the hit
  // picked with the arrow keys; Escape or a click elsewhere closes them.
  var SEARCH_DELAY = 250, SEARCH_MIN = 2, SEARCH_LIMIT = 25;
  var searching = { timer: null, ctl: null, seq: 0, q: "" };
  function hideResults() { $("results").hidden = true; $("search").setAttribute("aria-expanded", "false"); }
  function showResults() { $("results").hidden = false; $("search").setAttribute("aria-expanded", "true"); }
  function pick(hit) { hideResults(); open({ namespace: hit.namespace, name: hit.name, column: hit.column }); }
  function search(q) {
    var host = $("results"), seq = ++searching.seq;
    clearTimeout(searching.timer);
    if (searching.ctl) searching.ctl.abort();
    searching.ctl = window.AbortController ? new AbortController() : null;
    searching.q = q;
    host.setAttribute("data-state", "loading");
    return fetch("api/estate/search?q=" + enc(q) + "&limit=" + SEARCH_LIMIT, { credentials: "same-origin",
      headers: { Accept: "application/json" }, signal: searching.ctl ? searching.ctl.signal : undefined })
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (data) {
          if (!r.ok) throw new Error(r.status + ": " + (data && data.detail ? JSON.stringify(data.detail) : r.statusText));
          return data;
        });
      }).then(function (data) {
        if (seq !== searching.seq) return;  // an older answer: a newer search is under way
        host.textContent = ""; showResults();
        if (!data.hits.length) { host.appendChild(el("p", {}, "Nothing found for \u201c" + q + "\u201d in the DAGs you may read.")); }
        else {
          var t = el("table");
          data.hits.forEach(function (hit) {
            var tr = el("tr", { role: "option", "class": "hit-row" }); var td = el("td");
            var b = el("button", { type: "button", "class": "hit", tabindex: "-1" }, hit.label + (hit.column ? "." + hit.column : ""));
            b.addEventListener("click", function () { pick(hit); });
            tr.addEventListener("click", function (e) { if (e.target !== b) pick(hit); });
            td.appendChild(b); td.appendChild(path(hit.namespace + ":" + hit.name)); tr.appendChild(td);
            tr.appendChild(el("td", { "class": "kind" }, hit.column ? "column" + (hit.type ? " \u00b7 " + hit.type : "") : "dataset"));
            tr.hit = hit; t.appendChild(tr);
          });
          host.appendChild(t);
          if (data.hits.length >= SEARCH_LIMIT) host.appendChild(el("p", {}, "The first " + SEARCH_LIMIT + " hits: type more to narrow them."));
        }
        host.setAttribute("data-state", "ready");
      }).catch(function (err) {
        if (err && err.name === "AbortError") return;
        if (seq === searching.seq) { host.textContent = ""; host.appendChild(el("p", {}, "Search failed: " + (err.message || err))); showResults(); host.setAttribute("data-state", "error"); }
      });
  }
  function searchSoon() {
    var q = $("search").value.trim();
    clearTimeout(searching.timer);
    if (q.length < SEARCH_MIN) { searching.seq++; if (searching.ctl) searching.ctl.abort(); hideResults(); return; }
    if (q === searching.q && !$("results").hidden) return;
    searching.timer = setTimeout(function () { search(q); }, SEARCH_DELAY);
  }
  function move(step) {
    var rows = Array.prototype.slice.call($("results").querySelectorAll("tr.hit-row"));
    if (!rows.length || $("results").hidden) return;
    var at = rows.findIndex(function (r) { return r.classList.contains("active"); });
    if (at >= 0) { rows[at].classList.remove("active"); rows[at].removeAttribute("aria-selected"); }
    at = at < 0 ? (step > 0 ? 0 : rows.length - 1) : (at + step + rows.length) % rows.length;
    rows[at].classList.add("active"); rows[at].setAttribute("aria-selected", "true");
    rows[at].scrollIntoView({ block: "nearest" });
  }

  // A dataset's full name, muted, on its own line; it wraps after a slash rather than mid-word.
  function path(text) {
    var span = el("span", { "class": "sub" });
    String(text).split("/").forEach(function (part, i) {
      if (i) { span.appendChild(document.createTextNode("/")); span.appendChild(document.createElement("wbr")); }
      span.appendChild(document.createTextNode(part));
    });
    return span;
  }

  // The first view: datasets written most recently and the DAGs with lineage (names of readable DAGs only).
  function ago(iso) {
    if (!iso) return "";
    var s = (Date.now() - new Date(iso).getTime()) / 1000;
    if (!(s >= 0)) return iso.replace("T", " ").slice(0, 16);
    if (s < 90) return "just now";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 129600) return Math.round(s / 3600) + " h ago";
    if (s < 3888000) return Math.round(s / 86400) + " days ago";
    return iso.slice(0, 10);
  }
  function head(names) { var tr = el("tr"); names.forEach(function (n) { tr.appendChild(el("th", {}, n)); }); return tr; }
  function runCell(dagId, taskId, run) {
    var td = el("td", { "class": "run" });
    if (run && run.url) td.appendChild(el("a", { href: run.url, target: "_top", title: "this run's Column lineage tab" }, dagId + (taskId ? " / " + taskId : "")));
    else td.appendChild(document.createTextNode(dagId));
    return td;
  }
  function startView() {
    var box = $("start");
    box.setAttribute("data-state", "loading");
    return getJSON("api/estate/start?limit=12").then(function (data) {
      if (data.notice) notice(data.notice);  // e.g. the index is being built: the lists show what is indexed
      var recent = $("start-recent").querySelector(".list"), dags = $("start-dags").querySelector(".list");
      recent.textContent = ""; dags.textContent = "";
      if (!data.recent.length) {
        recent.appendChild(el("p", { "class": "empty" }, data.hidden_dags ?
          "Nothing you may read yet." : "No lineage recorded yet: run a DAG with a SparkLineageSubmitOperator task (e.g. lineage_etl)."));
      } else {
        var t = el("table");
        t.appendChild(head(["Dataset", "When", "Written by (its run\u2019s lineage)"]));
        data.recent.forEach(function (r) {
          var tr = el("tr", { "class": "start-dataset", "data-id": r.namespace + ":" + r.name });
          var td = el("td");
          var b = el("button", { type: "button", "class": "pick", title: "open the graph around " + r.name }, r.label);
          b.addEventListener("click", function () { open({ namespace: r.namespace, name: r.name, column: "" }); });
          td.appendChild(b); td.appendChild(path(r.namespace + ":" + r.name)); tr.appendChild(td);
          tr.appendChild(el("td", { "class": "when", title: r.written || "" }, ago(r.written)));
          tr.appendChild(runCell(r.dag_id, r.task_id, r));
          t.appendChild(tr);
        });
        recent.appendChild(t);
      }
      if (!data.dags.length) dags.appendChild(el("p", { "class": "empty" }, "None yet."));
      else {
        var d = el("table");
        d.appendChild(head(["DAG (click: the graph of what it writes)", "", "Last run"]));
        data.dags.forEach(function (g) {
          var tr = el("tr", { "class": "start-dag", "data-dag": g.dag_id });
          var td = el("td");
          var b = el("button", { type: "button", "class": "pick", title: "open the graph around what this DAG writes" }, g.dag_id);
          b.disabled = !g.writes.length;
          b.addEventListener("click", function () {
            state.starts = g.writes.map(function (w) { return { namespace: w.namespace, name: w.name, column: "" }; });
            load();
          });
          td.appendChild(b);
          td.appendChild(el("span", { "class": "sub" }, g.writes_total ? "writes " + g.writes.map(function (w) { return w.label; }).join(", \u200b") +
            (g.writes_total > g.writes.length ? " and " + (g.writes_total - g.writes.length) + " more" : "") : "writes no dataset"));
          tr.appendChild(td);
          tr.appendChild(el("td", { "class": "count" }, g.tasks + (g.tasks === 1 ? " task" : " tasks")));
          var last = el("td", { "class": "when" });
          if (g.last_run) { var a = el("a", { href: g.last_run.url, target: "_top", title: g.last_run.run_id + " (" + (g.last_run.end || "") + ")" }, ago(g.last_run.end)); last.appendChild(a); }
          tr.appendChild(last);
          d.appendChild(tr);
        });
        dags.appendChild(d);
        if (data.dags_total > data.dags.length) dags.appendChild(el("p", { "class": "hidden-total" }, (data.dags_total - data.dags.length) + " more: search for their datasets"));
      }
      if (data.hidden_dags) dags.appendChild(el("p", { "class": "hidden-total" }, "+ " + data.hidden_dags + " DAG" + (data.hidden_dags === 1 ? "" : "s") + " with lineage you may not read"));
      box.setAttribute("data-state", "ready");
    }).catch(function (err) {
      var recent = $("start-recent").querySelector(".list");
      recent.textContent = ""; recent.appendChild(el("p", { "class": "notice error" }, "Could not load the start page: " + (err.message || err)));
      box.setAttribute("data-state", "error");
    });
  }

  function runs() {
    var sel = $("as-of-run");
    if (sel.getAttribute("data-loaded")) return;
    sel.setAttribute("data-loaded", "1");
    getJSON("api/estate/runs").then(function (data) {
      data.runs.forEach(function (r) { sel.appendChild(el("option", { value: r.end }, r.dag_id + " / " + r.run_id)); });
    });
  }

  $("find").addEventListener("submit", function (e) {
    e.preventDefault();
    var active = $("results").hidden ? null : $("results").querySelector("tr.active");
    if (active) { pick(active.hit); return; }
    var q = $("search").value.trim(); if (q) search(q);
  });
  $("search").addEventListener("input", searchSoon);
  $("search").addEventListener("focus", function () { if ($("search").value.trim().length >= SEARCH_MIN && $("results").childNodes.length) showResults(); });
  $("search").addEventListener("keydown", function (e) {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") { e.preventDefault(); move(e.key === "ArrowDown" ? 1 : -1); }
    else if (e.key === "Escape") hideResults();
  });
  document.addEventListener("mousedown", function (e) { if (!$("find").contains(e.target)) hideResults(); });
  $("apply").addEventListener("click", function () { load(); });
  $("depth").addEventListener("change", function () { load(); });
  $("as-of-run").addEventListener("focus", runs);
  $("as-of-run").addEventListener("change", function () { $("as-of").value = $("as-of-run").value; load(); });
  $("impact-go").addEventListener("click", function () { if (state.starts.length) impact(); });
  ["direction", "impact-depth"].forEach(function (id) { $(id).addEventListener("change", function () { $("export-csv").href = impactQuery("csv"); $("export-json").href = impactQuery("json"); }); });
  function level(l) { state.level = l; $("level-column").className = l === "column" ? "on" : ""; $("level-table").className = l === "table" ? "on" : ""; if (state.graph) { render(); renderEdges(); } }
  $("level-column").addEventListener("click", function () { level("column"); });
  $("level-table").addEventListener("click", function () { level("table"); });
  api.open = open; api.expand = expand; api.impact = impact; api.load = load; api.search = search;

  var p = new URLSearchParams(location.search);
  if (p.get("depth") && $("depth").querySelector("option[value='" + p.get("depth").replace(/[^0-9]/g, "") + "']")) $("depth").value = p.get("depth");
  if (p.get("as_of")) $("as-of").value = p.get("as_of");
  if (p.get("before")) $("before").value = p.get("before");
  if (p.get("name")) open({ namespace: p.get("namespace") || "", name: p.get("name"), column: p.get("column") || "" });
  else { setState("idle"); startView(); }
})();
