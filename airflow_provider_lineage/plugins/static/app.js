/* Column lineage page (airflow-provider-lineage). Plain browser JavaScript, no build step.
 *
 * ?dag_id=&run_id=[&task_id=&map_index=][&dataset=&column=]  -> the run's (or task's) column graph
 * no dag_id                                                  -> search over recent runs
 *
 * Layout: dagre (vendored) places the dataset boxes; the page draws column rows and edges in SVG.
 * Test hooks: body[data-state] is "loading" | "ready" | "empty" | "error"; window.columnLineage
 * holds the graph, the counts and the timings (layoutMs, drawMs).
 */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var COLLAPSE_AT = 12, HEAD = 28, ROW = 20, MORE = 20, PAD_X = 10, CHAR = 7;
  var params = new URLSearchParams(window.location.search);
  var scope = {
    dag_id: params.get("dag_id"), run_id: params.get("run_id"),
    task_id: params.get("task_id"), map_index: params.get("map_index")
  };
  var state = { graph: null, level: "column", expanded: {}, selected: null, boxes: {}, depth: 3, lit: [],
    edgeEls: [], dsEdgeEls: [] };
  var api = window.columnLineage = { state: state, counts: null, timings: {}, errors: [] };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    for (var k in attrs || {}) n.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function sv(tag, attrs, text) {
    var n = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) n.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function setState(s) { document.body.setAttribute("data-state", s); }
  function enc(s) { return encodeURIComponent(s); }
  function runBase() { return "api/dags/" + enc(scope.dag_id) + "/runs/" + enc(scope.run_id); }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      return r.text().then(function (body) {
        var data = null;
        try { data = body ? JSON.parse(body) : null; } catch (e) { data = null; }
        if (!r.ok) {
          var detail = data && data.detail ? (typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail)) : body.slice(0, 300);
          var err = new Error(r.status + " " + (r.statusText || "") + ": " + detail);
          err.status = r.status;
          throw err;
        }
        return data;
      });
    });
  }

  function explainError(err) {
    if (err.status === 401) return "You are not signed in to Airflow (401). Sign in to Airflow and reload this page.";
    if (err.status === 403) return "You may not read this DAG's lineage (403): ask an Airflow admin for read access to the DAG.";
    if (err.status === 404) return "Not found (404): " + err.message;
    return "The column-lineage API failed: " + err.message;
  }

  function showMessage(kind, title, lines, table) {
    var m = $("message");
    m.hidden = false;
    m.className = kind;
    m.replaceChildren(el("h3", {}, title));
    (lines || []).forEach(function (l) { if (l) m.appendChild(el("p", {}, l)); });
    if (table) m.appendChild(table);
  }

  function notice(text, cls) { $("notices").appendChild(el("div", { "class": "notice " + (cls || "") }, text)); }

  // ---- tooltip -----------------------------------------------------------------------------------
  var tip = null;
  function showTip(evt, text) {
    tip = tip || $("tip");
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(evt.clientX + 14, window.innerWidth - 430) + "px";
    tip.style.top = (evt.clientY + 14) + "px";
  }
  function hideTip() { if (tip) tip.hidden = true; }
  function withTip(node, text) {
    node.addEventListener("mousemove", function (e) { showTip(e, text); });
    node.addEventListener("mouseleave", hideTip);
  }

  // ---- search page -------------------------------------------------------------------------------
  function unmaskedPage() {
    var tag = params.get("tag") || "";
    document.body.classList.add("search-page");
    $("title").textContent = "Where tags reach unmasked";
    $("scope").textContent = tag ? "tag " + tag : "every tag";
    setState("loading");
    getJSON("api/tags/unmasked" + (tag ? "?tag=" + enc(tag) : "")).then(function (data) {
      api.unmasked = data.unmasked;
      $("canvas").hidden = true;
      if (!data.unmasked.length) {
        showMessage("info", "No column receives " + (tag || "a tag") + " unmasked",
          ["Read the newest lineage record of " + data.records_read + " task(s) with column tags."]);
      } else {
        unmaskedList(data.unmasked, $("notices"));
      }
      setState("ready");
    }).catch(function (err) {
      showMessage("error", "Could not load the list", [explainError(err)]);
      setState("error");
    });
  }

  function searchPage() {
    $("bar").appendChild(el("a", { id: "unmasked-link", href: "?view=unmasked&tag=pii" }, "Where does pii reach unmasked?"));
    document.body.classList.add("search-page");
    $("scope").textContent = "search the datasets and columns of recent runs";
    $("canvas").hidden = true;
    showMessage("", "Find a dataset or column", [
      "Type a table, path or column name: the newest lineage records of the DAGs you may read are searched.",
      "Each run's own graph is in the \u201cColumn lineage\u201d tab of the DAG run and of its tasks (Airflow 3.1+)."
    ]);
    setState("ready");
    $("find").addEventListener("submit", function (e) {
      e.preventDefault();
      var q = $("search").value.trim();
      if (!q) return;
      setState("loading");
      getJSON("api/search?q=" + enc(q)).then(function (data) {
        var res = $("results");
        res.hidden = false;
        $("message").hidden = true;
        if (!data.hits.length) {
          res.replaceChildren(el("p", {}, "No dataset or column matching \u201c" + q + "\u201d in the recent lineage of the DAGs you may read."));
        } else {
          var t = el("table", { id: "hits" });
          var h = el("tr");
          ["Dataset", "Column", "Type", "DAG", "Run", "Task"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
          t.appendChild(h);
          data.hits.forEach(function (hit) {
            var tr = el("tr", { "class": "hit" });
            var link = "?dag_id=" + enc(hit.dag_id) + "&run_id=" + enc(hit.run_id) + "&dataset=" + enc(hit.dataset) +
              (hit.column ? "&column=" + enc(hit.column) : "");
            var a = el("a", { href: link, title: hit.dataset }, hit.label);
            var td = el("td"); td.appendChild(a); tr.appendChild(td);
            tr.appendChild(el("td", {}, hit.column || "")); tr.appendChild(el("td", {}, hit.type || ""));
            tr.appendChild(el("td", {}, hit.dag_id)); tr.appendChild(el("td", {}, hit.run_id));
            tr.appendChild(el("td", {}, hit.task_id));
            t.appendChild(tr);
          });
          res.replaceChildren(t);
        }
        setState("ready");
      }).catch(function (err) {
        $("results").hidden = true;
        showMessage("error", "Search failed", [explainError(err)]);
        setState("error");
      });
    });
  }

  // ---- run page: load ----------------------------------------------------------------------------
  function runPage() {
    $("scope").textContent = scope.dag_id + " \u203a " + scope.run_id + (scope.task_id ? " \u203a " + scope.task_id +
      (scope.map_index && scope.map_index !== "-1" ? "[" + scope.map_index + "]" : "") : "");
    var url = scope.task_id
      ? runBase() + "/tasks/" + enc(scope.task_id) + "/graph?map_index=" + enc(scope.map_index || "-1") + "&include=indexes"
      : runBase() + "/graph?include=indexes";  // graph + Sieve badges in one request: one connection per open page
    setState("loading");
    var t0 = performance.now();
    getJSON(url).then(function (graph) {
      api.timings.fetchMs = performance.now() - t0;
      state.graph = graph;
      taskNotices(graph);
      guardPanel(graph);
      if (!graph.datasets.length) { emptyState(graph); return; }
      render();
      if (params.get("dataset")) find(params.get("column") || "", params.get("dataset"));
      loadBadges(graph);
    }).catch(function (err) {
      showMessage("error", "Could not load the lineage", [explainError(err)]);
      setState("error");
    });
    $("find").addEventListener("submit", function (e) { e.preventDefault(); find($("search").value.trim()); });
    $("depth").addEventListener("change", function () {
      state.depth = parseInt($("depth").value, 10);
      if (state.selected) select(state.selected[0], state.selected[1]);
    });
    $("level-column").addEventListener("click", function () { setLevel("column"); });
    $("level-table").addEventListener("click", function () { setLevel("table"); });
    $("graph").addEventListener("click", function (e) { if (e.target === $("graph")) clearSelection(); });
  }

  function taskNotices(graph) {
    (graph.tasks || []).forEach(function (t) {
      if (t.truncated) {
        notice("Task " + t.label + ": the lineage record was cut (" + t.truncated.reason + "); kept " +
          t.truncated.edges_kept + " of " + t.truncated.edges_total + " column edges.", "error");
      }
      (t.problems || []).forEach(function (p) { notice("Task " + t.label + ": capture problem: " + p); });
      if (graph.datasets.length && t.note) notice("Task " + t.label + ": " + t.note);
    });
  }

  function emptyState(graph) {
    var t = el("table", { id: "tasks" });
    var h = el("tr");
    ["Task", "State", "Lineage", "Why"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
    t.appendChild(h);
    (graph.tasks || []).forEach(function (s) {
      var tr = el("tr");
      [s.label, s.state || "", s.status, s.note || ""].forEach(function (v) { tr.appendChild(el("td", {}, v)); });
      t.appendChild(tr);
    });
    showMessage("empty", "No column lineage captured", [graph.empty], graph.tasks && graph.tasks.length ? t : null);
    $("canvas").hidden = true;
    api.counts = { nodes: 0, edges: 0, datasetEdges: 0 };
    setState("empty");
  }

  function setLevel(level) {
    state.level = level;
    $("level-column").classList.toggle("on", level === "column");
    $("level-table").classList.toggle("on", level === "table");
    state.selected = null;
    render();
    applyBadges();
  }

  // ---- layout + drawing --------------------------------------------------------------------------
  function visibleFields(ds) {
    if (state.level === "table") return { rows: [], hidden: 0 };
    var all = ds.fields;
    if (all.length <= COLLAPSE_AT || state.expanded[ds.id]) return { rows: all, hidden: 0 };
    return { rows: all.slice(0, COLLAPSE_AT), hidden: all.length - COLLAPSE_AT };
  }

  function render() {
    var g = state.graph;
    api.path = null;
    state.lit = [];
    var t0 = performance.now();
    var layout = new dagre.graphlib.Graph({ multigraph: false });
    layout.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 90, marginx: 16, marginy: 16 });
    layout.setDefaultEdgeLabel(function () { return {}; });
    var shapes = {};
    g.datasets.forEach(function (ds) {
      var vis = visibleFields(ds);
      var longest = ds.label.length + 4, extra = badged(ds.id) ? 14 : 0;
      vis.rows.forEach(function (f) {
        longest = Math.max(longest, Math.min(f.name.length, 34) + extra + (f.type || "").length + 8 + chipChars(f));
      });
      var width = Math.max(180, Math.min(440, PAD_X * 2 + CHAR * longest));
      var height = HEAD + vis.rows.length * ROW + (vis.hidden ? MORE : 0) + (state.level === "table" ? 0 : 6);
      shapes[ds.id] = { ds: ds, rows: vis.rows, hidden: vis.hidden, width: width, height: height };
      layout.setNode(ds.id, { width: width, height: height });
    });
    var pairs = {};
    g.edges.concat(g.dataset_edges).forEach(function (e) {
      if (e.source !== e.target && !pairs[e.source + "\u0000" + e.target]) {
        pairs[e.source + "\u0000" + e.target] = true;
        layout.setEdge(e.source, e.target);
      }
    });
    dagre.layout(layout);
    var t1 = performance.now();
    var svg = $("graph");
    var size = layout.graph();
    svg.setAttribute("width", Math.max(size.width || 0, 200));
    svg.setAttribute("height", Math.max(size.height || 0, 100));
    svg.replaceChildren();
    svg.classList.remove("faded");
    var edgeLayer = sv("g", { "class": "edges" });
    var boxLayer = sv("g", { "class": "boxes" });
    svg.appendChild(edgeLayer);
    svg.appendChild(boxLayer);
    state.boxes = {};
    g.datasets.forEach(function (ds) {
      var n = layout.node(ds.id), s = shapes[ds.id];
      s.x = n.x - s.width / 2; s.y = n.y - s.height / 2;
      state.boxes[ds.id] = s;
      s.el = drawBox(s);
      boxLayer.appendChild(s.el);
    });
    var drawn = 0, drawnDs = 0;
    state.edgeEls = []; state.dsEdgeEls = [];
    if (state.level === "table") {
      Object.keys(pairs).forEach(function (key) {
        var ends = key.split("\u0000");
        var a = state.boxes[ends[0]], b = state.boxes[ends[1]];
        var direct = g.edges.some(function (e) { return e.source === ends[0] && e.target === ends[1] && e.type === "DIRECT"; });
        var p = sv("path", { "class": "edge table-edge " + (direct ? "direct" : "indirect"),
          d: curve(a.x + a.width, a.y + HEAD / 2, b.x, b.y + HEAD / 2), "data-source": ends[0], "data-target": ends[1] });
        edgeLayer.appendChild(p);
        drawn++;
      });
    } else {
      g.edges.forEach(function (e, i) {
        var a = state.boxes[e.source], b = state.boxes[e.target];
        state.edgeEls.push(edgePath(e, i, rowY(a, e.source_field), rowY(b, e.target_field), a, b, "column-edge", edgeLayer));
        drawn++;
      });
      g.dataset_edges.forEach(function (e, i) {
        var a = state.boxes[e.source], b = state.boxes[e.target];
        state.dsEdgeEls.push(edgePath(e, i, rowY(a, e.source_field), b.y + HEAD / 2, a, b, "dataset-edge", edgeLayer));
        drawnDs++;
      });
      // edges of the previous run that this run no longer has: drawn apart (red, dotted), never counted as edges
      (g.removed_edges || []).forEach(function (e, i) {
        var a = state.boxes[e.source], b = state.boxes[e.target];
        if (!a || !b) return;
        var y2 = e.target_field ? rowY(b, e.target_field) : b.y + HEAD / 2;
        edgePath(e, i, rowY(a, e.source_field), y2, a, b, "removed-edge", edgeLayer);
      });
    }
    var t2 = performance.now();
    api.counts = { nodes: g.datasets.length, edges: drawn, datasetEdges: drawnDs, level: state.level };
    api.timings.layoutMs = t1 - t0;
    api.timings.drawMs = t2 - t1;
    api.timings.readyAt = performance.now();
    $("canvas").hidden = false;
    $("message").hidden = true;
    setState("ready");
  }

  function curve(x1, y1, x2, y2) {
    var dx = Math.max(40, (x2 - x1) / 2);
    if (x2 < x1) dx = 80;
    return "M" + x1 + "," + y1 + " C" + (x1 + dx) + "," + y1 + " " + (x2 - dx) + "," + y2 + " " + x2 + "," + y2;
  }

  function edgePath(e, i, y1, y2, a, b, kind, layer) {
    var cls = "edge " + kind + " " + (e.type === "DIRECT" ? "direct" : "indirect") + (e.masking ? " masked" : "") +
      (e.change ? " change-" + e.change : "");
    var d = curve(a.x + a.width, y1, b.x, y2);
    var p = sv("path", { "class": cls, d: d, "data-kind": kind, "data-index": i });
    var hit = sv("path", { "class": "edge-hit", d: d });
    var text = e.type + " / " + e.subtype + (e.masking ? "\nmasked: yes (the value is obfuscated)" : "\nmasked: no") +
      "\n" + e.source + " . " + e.source_field + "\n\u2192 " + e.target + (e.target_field ? " . " + e.target_field : " (whole dataset)") +
      "\ntask: " + (e.tasks || []).join(", ") +
      (e.change === "added" ? "\nNEW since the previous run" : "") +
      (e.change === "removed" ? "\nREMOVED: in the previous run, not in this one" : "") +
      (e.change === "changed" && e.previous ? "\nCHANGED: was " + e.previous.type + " / " + e.previous.subtype +
        (e.previous.masking ? ", masked" : ", not masked") : "");
    withTip(hit, text);
    layer.appendChild(p);
    layer.appendChild(hit);
    return p;
  }

  // ---- lineage as a guard: tag chips, the "changed" badge, where tags reach unmasked -------------
  function chipChars(f) {
    return (f.tags || []).reduce(function (n, t) { return n + t.tag.length + 3; }, 0);
  }

  function pathText(path) {
    return (path || []).map(function (p) {
      if (p.hidden) return "\u2026 " + p.hidden + " hop(s) you cannot read \u2026";  // the access rule: a count
      var parts = String(p.name).split("/").filter(Boolean);
      return parts.slice(-2).join("/") + "." + p.column;
    }).join(" \u2192 ");
  }

  function drawChips(row, f, right) {
    var x = right;
    (f.tags || []).slice().reverse().forEach(function (t) {
      var w = t.tag.length * 6 + 10;
      x -= w + 3;
      var g = sv("g", { "class": "chip " + t.source + (t.masked ? " masked" : ""), transform: "translate(" + x + ",3)",
        "data-tag": t.tag, "data-source": t.source });
      g.appendChild(sv("rect", { width: w, height: ROW - 6 }));
      g.appendChild(sv("text", { x: 5, y: (ROW - 6) / 2 + 1 }, t.tag));
      withTip(g, "tag " + t.tag + ": " + (t.source === "declared" ? "declared on this column" :
        "inherited along lineage" + (t.masked ? " (through a masking step)" : " (no masking on the way)")) +
        "\npath: " + pathText(t.path));
      row.appendChild(g);
    });
  }

  function guardPanel(graph) {
    (graph.tasks || []).forEach(function (t) {
      (t.guard_problems || []).forEach(function (p) { notice("Task " + t.label + ": lineage guard: " + p, "error"); });
      if (t.approximate) {  // columns whose inputs are a superset or include an unknown input (issue 46)
        notice("Task " + t.label + ": approximate: " + t.approximate + " column(s) with approximate lineage (" +
          (t.approximate_columns || []).slice(0, 5).map(function (a) {
            return a.column + ": " + ((a.reasons || [])[0] || "");
          }).join("; ") + ")", "warning");
      }
      ((t.policy || {}).violations || []).forEach(function (v) {
        notice("Task " + t.label + ": policy: " + v.tag + " reaches " + v.column.column + " unmasked (" + pathText(v.path) + ")", "error");
      });
    });
    var changed = (graph.changes || []).filter(function (c) { return c.changed; });
    api.changed = !!graph.changed;
    if (changed.length) {
      var badge = el("button", { id: "changed-badge", type: "button", "class": "changed-badge",
        title: "The lineage of " + changed.map(function (c) { return c.task; }).join(", ") + " changed since the previous successful run" },
        "changed");
      $("title").after(badge);
      var box = el("div", { id: "changes", hidden: "" });
      changed.forEach(function (c) {
        var d = c.diff;
        box.appendChild(el("h4", {}, "Task " + c.task + ": changed since run " + c.previous_run_id));
        var ul = el("ul");
        function col(x) { return pathText([x]).replace(/\.null$/, ".*"); }
        (d.columns_added || []).forEach(function (x) { ul.appendChild(el("li", { "class": "added" }, "+ column " + col(x))); });
        (d.columns_removed || []).forEach(function (x) { ul.appendChild(el("li", { "class": "removed" }, "\u2212 column " + col(x))); });
        (d.edges_added || []).forEach(function (e) { ul.appendChild(el("li", { "class": "added" }, "+ edge " + col(e.from) + " \u2192 " + col(e.to) + " (" + e.type + "/" + e.subtype + ")")); });
        (d.edges_removed || []).forEach(function (e) { ul.appendChild(el("li", { "class": "removed" }, "\u2212 edge " + col(e.from) + " \u2192 " + col(e.to) + " (" + e.type + "/" + e.subtype + ")")); });
        (d.edges_changed || []).forEach(function (e) {
          ul.appendChild(el("li", { "class": "changed" }, "~ edge " + col(e.from) + " \u2192 " + col(e.to) + ": " + e.previous.type + "/" +
            e.previous.subtype + (e.previous.masking ? " masked" : "") + " \u2192 " + e.type + "/" + e.subtype + (e.masking ? " masked" : "")));
        });
        (d.datasets_added || []).forEach(function (x) { ul.appendChild(el("li", { "class": "added" }, "+ " + x.role + " " + x.namespace + ":" + x.name)); });
        (d.datasets_removed || []).forEach(function (x) { ul.appendChild(el("li", { "class": "removed" }, "\u2212 " + x.role + " " + x.namespace + ":" + x.name)); });
        box.appendChild(ul);
      });
      $("notices").after(box);
      badge.addEventListener("click", function () { box.hidden = !box.hidden; });
    }
    if ((graph.unmasked || []).length) unmaskedList(graph.unmasked, $("notices"));
  }

  function unmaskedList(items, after) {
    var wrap = el("div", { id: "unmasked" });
    var tags = [];
    items.forEach(function (u) { if (tags.indexOf(u.tag) < 0) tags.push(u.tag); });
    wrap.appendChild(el("h4", {}, "Where tags reach unmasked (" + items.length + ")"));
    var t = el("table");
    var h = el("tr");
    ["Tag", "Column", "Path", "Written by"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
    t.appendChild(h);
    items.forEach(function (u) {
      var tr = el("tr", { "class": "unmasked", "data-tag": u.tag, "data-dataset": u.dataset, "data-column": u.column });
      [u.tag, u.label + "." + u.column, pathText(u.path), (u.dag_id ? u.dag_id + " \u203a " : "") + (u.task || u.task_id || "")]
        .forEach(function (v) { tr.appendChild(el("td", {}, v)); });
      t.appendChild(tr);
    });
    wrap.appendChild(t);
    after.after(wrap);
    return wrap;
  }
  api.unmaskedList = unmaskedList;

  function rowIndex(box, field) {
    for (var i = 0; i < box.rows.length; i++) if (box.rows[i].name === field) return i;
    return -1;
  }

  function rowY(box, field) {
    var i = rowIndex(box, field);
    if (i >= 0) return box.y + HEAD + i * ROW + ROW / 2;
    if (box.hidden) return box.y + HEAD + box.rows.length * ROW + MORE / 2;  // the "show all" row
    return box.y + HEAD / 2;
  }

  function drawBox(s) {
    var ds = s.ds;
    var g = sv("g", { "class": "box", transform: "translate(" + s.x + "," + s.y + ")", "data-id": ds.id });
    g.appendChild(sv("rect", { "class": "frame", width: s.width, height: s.height }));
    g.appendChild(sv("rect", { "class": "head", width: s.width, height: HEAD, rx: 5 }));
    var title = sv("text", { "class": "title", x: PAD_X, y: HEAD / 2 }, clip(ds.label, Math.floor((s.width - 20) / CHAR)));
    withTip(title, ds.id + "\nwritten by: " + (ds.written_by.join(", ") || "-") + "\nread by: " + (ds.read_by.join(", ") || "-") +
      "\n" + ds.fields.length + " columns");
    g.appendChild(title);
    s.rows.forEach(function (f, i) {
      var row = sv("g", { "class": "row" + (f.removed ? " removed" : "") + (f.change === "added" ? " added" : ""),
        transform: "translate(0," + (HEAD + i * ROW) + ")", "data-field": f.name });
      row.appendChild(sv("rect", { width: s.width, height: ROW }));
      row.appendChild(sv("text", { x: PAD_X, y: ROW / 2 }, clip(f.name, 34)));
      row.appendChild(sv("text", { "class": "type", x: s.width - PAD_X, y: ROW / 2, "text-anchor": "end" }, clip(f.type || "", 18)));
      drawChips(row, f, s.width - PAD_X - CHAR * Math.min((f.type || "").length, 18) - 6);
      row.addEventListener("click", function (evt) { evt.stopPropagation(); select(ds.id, f.name); });
      g.appendChild(row);
    });
    if (s.hidden) {
      var more = sv("g", { "class": "more", transform: "translate(0," + (HEAD + s.rows.length * ROW) + ")" });
      more.appendChild(sv("rect", { width: s.width, height: MORE }));
      more.appendChild(sv("text", { x: PAD_X, y: MORE / 2 }, "\u2026 show all " + ds.fields.length + " columns (" + s.hidden + " more)"));
      more.addEventListener("click", function (evt) { evt.stopPropagation(); expand(ds.id); });
      g.appendChild(more);
    }
    return g;
  }

  function expand(id) {
    state.expanded[id] = true;
    var sel = state.selected;
    render();
    applyBadges();
    if (sel) select(sel[0], sel[1]);
  }

  // ---- selection: one column's path ----------------------------------------------------------------
  function clearSelection() {
    state.selected = null;
    var svg = $("graph");
    svg.classList.remove("faded");
    (state.lit || []).forEach(function (n) { n.classList.remove("hl", "hl-box", "sel", "found"); });
    state.lit = [];
    api.path = null;
  }

  function select(dataset, column) {
    if (state.level === "table") setLevel("column");
    state.selected = [dataset, column];
    var t0 = performance.now();
    var url = runBase() + "/column?dataset=" + enc(dataset) + "&column=" + enc(column) + "&depth=" + state.depth +
      (scope.task_id ? "&task_id=" + enc(scope.task_id) + "&map_index=" + enc(scope.map_index || "-1") : "");
    setState("loading");
    return getJSON(url).then(function (path) {
      var hidden = path.columns.some(function (c) { var b = state.boxes[c[0]]; return b && rowIndex(b, c[1]) < 0 && b.hidden; });
      if (hidden) {
        path.columns.forEach(function (c) { var b = state.boxes[c[0]]; if (b && rowIndex(b, c[1]) < 0) state.expanded[c[0]] = true; });
        render();
        applyBadges();
      }
      highlight(path);
      api.timings.pathMs = performance.now() - t0;
      setState("ready");
    }).catch(function (err) {
      notice("Could not load the path of " + column + ": " + explainError(err), "error");
      setState("ready");
    });
  }

  function highlight(path) {
    clearSelection();
    state.selected = [path.dataset, path.column];
    var svg = $("graph");
    var lit = state.lit;
    function on(n, cls) { if (n) { n.classList.add(cls); lit.push(n); } }
    path.edges.forEach(function (i) { on(state.edgeEls[i], "hl"); });
    path.dataset_edges.forEach(function (i) { on(state.dsEdgeEls[i], "hl"); });
    path.columns.forEach(function (c, k) {
      var box = boxNode(c[0]);
      if (!box) return;
      on(box, "hl-box");
      var row = rowNode(box, c[1]);
      on(row, "hl");
      if (row && k === 0) row.classList.add("sel");
    });
    (path.datasets || []).forEach(function (id) { on(boxNode(id), "hl-box"); });
    svg.classList.add("faded");
    api.path = path;
  }

  function boxNode(id) { var s = state.boxes[id]; return s ? s.el : null; }
  function rowNode(box, field) {
    var rows = box.querySelectorAll(".row");
    for (var i = 0; i < rows.length; i++) if (rows[i].getAttribute("data-field") === field) return rows[i];
    return null;
  }

  // ---- find in the graph ---------------------------------------------------------------------------
  function find(q, datasetId) {
    if (!state.graph || (!q && !datasetId)) return;
    var needle = (q || "").toLowerCase(), hit = null;
    state.graph.datasets.some(function (ds) {
      if (datasetId && ds.id !== datasetId) return false;
      if (!needle || ds.label.toLowerCase().indexOf(needle) >= 0 || ds.id.toLowerCase().indexOf(needle) >= 0) {
        if (!needle || !datasetId) { hit = [ds.id, null]; return true; }
      }
      return ds.fields.some(function (f) {
        if (f.name.toLowerCase() === needle || (!datasetId && f.name.toLowerCase().indexOf(needle) >= 0)) { hit = [ds.id, f.name]; return true; }
        return false;
      });
    });
    clearSelection();
    if (!hit) { notice("Nothing named \u201c" + q + "\u201d in this graph.", "error"); return; }
    if (state.level === "table" && hit[1]) setLevel("column");
    var box = state.boxes[hit[0]];
    if (hit[1] && box && rowIndex(box, hit[1]) < 0 && box.hidden) expand(hit[0]);
    var node = boxNode(hit[0]);
    var target = node;
    node.classList.add("found");
    state.lit.push(node);
    if (hit[1]) { var row = rowNode(node, hit[1]); if (row) { row.classList.add("found"); state.lit.push(row); target = row; } }
    api.found = hit;
    if (target.scrollIntoView) target.scrollIntoView({ block: "center", inline: "center" });
  }

  // ---- Sieve index badges --------------------------------------------------------------------------
  function loadBadges(graph) {
    var batched = graph && graph.indexes ? Promise.resolve({ indexes: graph.indexes }) : null;
    (batched || getJSON(runBase() + "/indexes")).then(function (data) {
      state.badges = data.indexes || [];
      api.badgesDone = true;
      if (!state.badges.length) return;
      var sel = state.selected, found = api.found;
      render();  // boxes with a badge get wider
      applyBadges();
      if (sel) select(sel[0], sel[1]);
      else if (found) find(found[1] || "", found[0]);
      api.badgesShown = $("graph").querySelectorAll(".badge").length;
    }).catch(function (err) { api.badgesDone = true; notice("Sieve index states unavailable: " + explainError(err)); });
  }

  function badged(id) {
    return (state.badges || []).some(function (b) { return b.dataset === id; });
  }

  function applyBadges() {
    (state.badges || []).forEach(function (b) {
      var box = boxNode(b.dataset);
      var row = box && rowNode(box, b.column);
      if (!row) return;
      var s = state.boxes[b.dataset];
      var label = "idx " + (b.version !== null && b.version !== undefined ? "v" + b.version + " " : "") + b.state;
      var w = label.length * 6 + 8;
      var nameLength = Math.min(b.column.length, 34);
      var g = sv("g", { "class": "badge " + b.state, transform: "translate(" + (PAD_X + CHAR * nameLength + 6) + ",3)",
        "data-state": b.state, "data-dataset": b.dataset, "data-column": b.column });
      g.appendChild(sv("rect", { width: w, height: ROW - 6 }));
      g.appendChild(sv("text", { x: 4, y: (ROW - 6) / 2 + 1 }, label));
      var text = "Sieve index on " + b.column + ": " + b.state + (b.version != null ? " (version " + b.version + ")" : "") +
        "\n" + (b.reason || "") + (b.files_added ? "\nfiles added since: " + b.files_added : "") +
        (b.files_removed ? "\nfiles removed since: " + b.files_removed : "") + (b.files_changed ? "\nfiles rewritten: " + b.files_changed : "") +
        "\n" + (b.index_path || "");
      withTip(g, text);
      row.appendChild(g);
    });
  }

  window.addEventListener("error", function (e) { api.errors.push(String(e.message)); });
  if (scope.dag_id && scope.run_id) runPage(); else if (params.get("view") === "unmasked") unmaskedPage(); else searchPage();
})();
