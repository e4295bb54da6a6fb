// synclab live lab page: draws each State the server sends (see web.go)
// over server-sent events. No network resource but this server's own.
"use strict";
window.addEventListener("error", function (e) {
  document.body.dataset.error = String(e.message || e);
});
(function () {
  var NS = "http://www.w3.org/2000/svg";
  var diagramSeq = -1;
  var lastSeen = 0;
  function $(id) { return document.getElementById(id); }
  function el(name, text, parent, cls) {
    var e = document.createElement(name);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function dur(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(2) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + " µs";
    return ns + " ns";
  }

  function table(S) {
    var box = $("table");
    box.textContent = "";
    if (!S.table) { el("p", "waiting for the lab's table…", box); return; }
    var t = el("table", null, box);
    var hr = el("tr", null, el("thead", null, t));
    S.table.headers.forEach(function (h) { el("th", h, hr); });
    var tb = el("tbody", null, t);
    S.table.rows.forEach(function (r) {
      var cls = "member";
      if (!r.reachable) cls += " silent";
      if (r.differs) cls += " differs";
      if (r.stepped_back) cls += " stepped";
      if (r.self) cls += " self";
      var tr = el("tr", null, tb, cls);
      tr.dataset.id = r.id;
      r.cells.forEach(function (c) { el("td", c, tr); });
    });
    var notes = $("notes");
    notes.textContent = "";
    (S.table.notes || []).forEach(function (n) { el("li", n, notes); });
  }

  // charts draws, per member, its clock offset from this member with its
  // bound as a band, and (timed) its offset from its source with its
  // error bound, over the history the server keeps.
  function charts(S) {
    var box = $("charts");
    box.textContent = "";
    var H = S.history || [];
    if (H.length < 2 || !S.table) { el("p", "collecting samples…", box); return; }
    var t0 = H[0].t, t1 = H[H.length - 1].t;
    S.table.rows.forEach(function (r) {
      var series = [
        { key: "offset_ns", bound: function (m) { return m.bound_ns || 0; }, cls: "off", name: "offset from this member" },
        { key: "source_offset_ns", bound: function (m) { return m.source_bound_ns || 0; }, cls: "src", name: "offset from its source" },
        // timed's error bound without an offset (a Berkeley member): the
        // bound alone, around zero.
        { key: "bound_only", bound: function (m) { return m.source_bound_ns || 0; }, cls: "src", name: "its error bound" }
      ];
      H.forEach(function (p) {
        var m = p.members[r.id];
        if (m && (m.source_offset_ns === undefined || m.source_offset_ns === null) && m.source_bound_ns != null) m.bound_only = 0;
      });
      var any = false, lo = 0, hi = 0;
      H.forEach(function (p) {
        var m = p.members[r.id];
        if (!m) return;
        series.forEach(function (s) {
          if (m[s.key] === undefined || m[s.key] === null) return;
          any = true;
          lo = Math.min(lo, m[s.key] - s.bound(m));
          hi = Math.max(hi, m[s.key] + s.bound(m));
        });
      });
      var fig = el("figure", null, box, "chart");
      fig.dataset.id = r.id;
      var W = 260, Hh = 90, pad = 4;
      var g = svg("svg", { width: W, height: Hh, viewBox: "0 0 " + W + " " + Hh }, fig);
      if (!any) {
        svg("text", { x: 8, y: Hh / 2 }, g).textContent = "no clock reading";
      } else {
        if (hi === lo) { hi += 1; lo -= 1; }
        var X = function (t) { return pad + (W - 2 * pad) * (t1 === t0 ? 1 : (t - t0) / (t1 - t0)); };
        var Y = function (v) { return Hh - pad - (Hh - 2 * pad) * (v - lo) / (hi - lo); };
        svg("line", { x1: pad, x2: W - pad, y1: Y(0), y2: Y(0), "class": "zero" }, g);
        series.forEach(function (s) {
          var top = [], bot = [], mid = [];
          H.forEach(function (p) {
            var m = p.members[r.id];
            if (!m || m[s.key] === undefined || m[s.key] === null) return;
            var v = m[s.key], b = s.bound(m);
            top.push(X(p.t) + "," + Y(v + b));
            bot.unshift(X(p.t) + "," + Y(v - b));
            mid.push(X(p.t) + "," + Y(v));
          });
          if (!mid.length) return;
          svg("polygon", { points: top.concat(bot).join(" "), "class": "band " + s.cls }, g);
          svg("polyline", { points: mid.join(" "), "class": "line " + s.cls }, g);
        });
      }
      var last = H[H.length - 1].members[r.id];
      var cap = "member " + r.id;
      if (last && last.offset_ns !== undefined && last.offset_ns !== null) cap += ": " + dur(last.offset_ns) + " ± " + dur(last.bound_ns || 0);
      if (last && last.source_offset_ns !== undefined && last.source_offset_ns !== null) cap += "; source " + dur(last.source_offset_ns) + (last.source_bound_ns != null ? " ± " + dur(last.source_bound_ns) : "");
      else if (last && last.source_bound_ns != null) cap += "; error bound ± " + dur(last.source_bound_ns);
      if (!last) cap += ": no answer";
      el("figcaption", cap, fig);
    });
  }

  function tracePart(S) {
    var T = S.trace;
    var info = T.mode === "off" ? "No trace window (started with --no-trace)." :
      (T.mode === "failed" ? "Trace window FAILED: " + T.why :
        (T.mode === "starting" ? "Turning the trace window on…" :
          "Last " + (T.window_ms / 1000) + " s, " + T.events + " events" + (T.capped ? " (a busy window: its latest " + T.events + " events only)" : "") + "; " + T.why + ". Scope: " + T.scope + "."));
    $("traceinfo").textContent = info;
    $("trace").dataset.mode = T.mode;
    var ul = $("tracemembers");
    ul.textContent = "";
    (T.members || []).forEach(function (m) {
      var who = (m.name ? m.name + " (member " + m.id + ")" : "member " + m.id);
      var li = el("li", m.answering ? who + ": " + m.events + " events in the window" + (m.lost ? " (some dropped before the page read them)" : "") +
        (m.ahead ? "; " + m.ahead + " stamped after this host's now, up to " + (m.ahead_ms / 1000) + " s, beyond their clock's error bound (its clock runs ahead): left out" : "") +
        (m.why ? "; " + m.why : "") :
        who + ": NOT ANSWERING TRACES: " + (m.why || "no answer"), ul);
      li.className = m.answering ? "ok" : "bad";
      li.dataset.member = m.id;
    });
    if (T.diagram !== diagramSeq && T.diagram > 0 && $("follow").checked) {
      diagramSeq = T.diagram;
      $("diagram").src = "api/diagram?n=" + T.diagram;
    }
  }

  function verdicts(S) {
    var V = S.verdicts;
    var t = $("vtable");
    t.textContent = "";
    $("verdictinfo").textContent = V.error ? V.error : (V.results.length ? "Checked " + new Date(V.at).toLocaleTimeString() + "." : "No property applies to these events.");
    if (V.results.length) {
      var hr = el("tr", null, t);
      ["Daemon", "Property", "Verdict", "Why"].forEach(function (h) { el("th", h, hr); });
    }
    V.results.forEach(function (r) {
      var tr = el("tr", null, t, "verdict " + r.verdict.replace(/ /g, "-"));
      el("td", r.daemon, tr);
      el("td", r.property, tr).title = r.promise;
      el("td", r.verdict, tr);
      el("td", r.why, tr);
    });
    var n = $("vnotes");
    n.textContent = "";
    (V.notes || []).forEach(function (x) { el("li", x, n); });
  }

  function draw(S) {
    lastSeen = Date.now();
    var c = S.cluster;
    $("subtitle").textContent = c ? (S.daemon + " cluster \u201c" + c.cluster + "\u201d seen from member " + c.from + ": " + c.answered + " of " + c.members +
      " members answered; updated " + new Date(S.updated).toLocaleTimeString()) : S.daemon + ": waiting for the lab's table…";
    var err = $("error");
    err.hidden = !S.error;
    err.textContent = S.error ? "Reading the lab failed (the table is the last one read): " + S.error : "";
    table(S);
    charts(S);
    tracePart(S);
    verdicts(S);
    document.body.dataset.seq = S.seq;
    document.body.dataset.ready = "1";
    window.synclabState = S;
  }

  var es = new EventSource("api/stream");
  es.onmessage = function (m) { draw(JSON.parse(m.data)); };
  setInterval(function () {
    if (lastSeen && Date.now() - lastSeen > 5000) {
      var err = $("error");
      err.hidden = false;
      err.textContent = "No news from the server for " + Math.round((Date.now() - lastSeen) / 1000) + " s (is `web` still running?)";
    }
  }, 1000);
})();
