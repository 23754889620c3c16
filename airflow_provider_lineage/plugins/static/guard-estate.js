/* Estate page addition (lineage as a guard, docs/guard.md): "Where does <tag> reach unmasked".
 * Plain browser JavaScript. Reads GET api/tags/unmasked?tag= (tags along the estate index's edges of the
 * DAGs the user may read; without index data, their newest lineage records) and lists each column that
 * inherited the tag through no masking step, with its path and the task that wrote it; problems of the tag
 * declaration (a malformed Variable) as notices. Test hooks: #unmasked tr.unmasked[data-tag][data-column].
 */
(function () {
  "use strict";
  var box = document.getElementById("unmasked-estate");
  var pick = document.getElementById("unmasked-tag");
  if (!box || !pick) return;
  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function short(p) {
    if (p.hidden) return "\u2026 " + p.hidden + " hop(s) you cannot read \u2026";  // the access rule: a count
    return String(p.name).split("/").filter(Boolean).slice(-2).join("/") + "." + p.column;
  }
  function load() {
    var tag = pick.value.trim();
    box.setAttribute("data-state", "loading");
    fetch("api/tags/unmasked" + (tag ? "?tag=" + encodeURIComponent(tag) : ""),
          { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (data) {
        box.replaceChildren();
        var wrap = el("div", { id: "unmasked" });
        if (!data.unmasked.length) {
          wrap.appendChild(el("p", {}, "No column receives " + (tag || "a tag") + " unmasked (" + (data.source === "estate" ?
            "estate index: " + data.columns_tagged + " tagged column(s)" :
            "newest record of " + data.records_read + " task(s) with column tags") + ")."));
        } else {
          var t = el("table");
          var h = el("tr");
          ["Tag", "Column", "Path", "Written by"].forEach(function (c) { h.appendChild(el("th", {}, c)); });
          t.appendChild(h);
          data.unmasked.forEach(function (u) {
            var tr = el("tr", { "class": "unmasked", "data-tag": u.tag, "data-dataset": u.dataset, "data-column": u.column });
            tr.appendChild(el("td", {}, u.tag));
            tr.appendChild(el("td", {}, u.label + "." + u.column));
            tr.appendChild(el("td", {}, (u.path || []).map(short).join(" \u2192 ")));
            var who = el("td");
            if (u.dag_id) {
              who.appendChild(el("a", { target: "_top", href: "../dags/" + encodeURIComponent(u.dag_id) + "/runs/" +
                encodeURIComponent(u.run_id) + "/plugin/column-lineage-run" }, u.dag_id + " / " + u.task_id));
            } else {
              who.textContent = "a DAG you cannot read";
            }
            tr.appendChild(who);
            t.appendChild(tr);
          });
          wrap.appendChild(t);
        }
        if (data.hidden) {
          wrap.appendChild(el("p", { "class": "notice" }, data.hidden + " more column(s) receive " + (tag || "a tag") +
            " unmasked in datasets of DAGs you cannot read."));
        }
        if (data.problems_hidden) {
          wrap.appendChild(el("p", { "class": "notice" }, data.problems_hidden + " problem(s) of the tag declaration " +
            "are shown only to users who may read it."));
        }
        (data.problems || []).forEach(function (p) {
          wrap.appendChild(el("p", { "class": "notice error" }, "Column tags: " + p));
        });
        box.appendChild(wrap);
        box.setAttribute("data-state", "ready");
      })
      .catch(function (err) { box.textContent = "Could not list where tags reach unmasked: " + err.message; box.setAttribute("data-state", "error"); });
  }
  pick.addEventListener("change", load);
  load();
})();
