// synclab space-time diagram: draws the embedded data (see html.go) as an
// SVG and lets the reader filter and explore it. No network resources.
"use strict";
window.addEventListener("error", function (e) {
  document.body.dataset.error = String(e.message || e);
});
(function () {
  var D = JSON.parse(document.getElementById("data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var ML = D.geo[0], MT = D.geo[1], CW = D.geo[2], RH = D.geo[3];
  var state = { hiddenProcs: {}, hiddenKinds: {}, tmin: null, tmax: null, label: "lamport", xaxis: "causal", selected: -1 };
  var color = {};
  D.kinds.forEach(function (k) { color[k.name] = k.color; });
  var info = document.getElementById("info");
  if (D.note) info.textContent = D.note; // a checker's verdict, its offending events in red

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(s, attrs, parent) {
    var t = el("text", attrs, parent);
    t.textContent = s;
    return t;
  }
  function checkbox(parent, label, onchange) {
    var l = document.createElement("label");
    var c = document.createElement("input");
    c.type = "checkbox";
    c.checked = true;
    c.addEventListener("change", function () { onchange(c.checked); render(); });
    l.appendChild(c);
    l.appendChild(document.createTextNode(" " + label));
    parent.appendChild(l);
  }

  document.getElementById("title").textContent = D.title;
  document.getElementById("subtitle").textContent = "start " + D.start + "; vector times " + D.members;
  D.procs.forEach(function (p, i) {
    checkbox(document.getElementById("procFilter"), p.label, function (on) { state.hiddenProcs[i] = !on; });
  });
  D.kinds.forEach(function (k) {
    checkbox(document.getElementById("kindFilter"), k.name, function (on) { state.hiddenKinds[k.name] = !on; });
  });
  function num(id) {
    var v = document.getElementById(id).value;
    return v === "" ? null : Number(v);
  }
  ["tmin", "tmax"].forEach(function (id) {
    document.getElementById(id).addEventListener("input", function () { state[id] = num(id); render(); });
  });
  document.getElementById("label").addEventListener("change", function (e) { state.label = e.target.value; render(); });
  document.getElementById("xaxis").addEventListener("change", function (e) { state.xaxis = e.target.value; render(); });
  document.getElementById("clear").addEventListener("click", function () { state.selected = -1; render(); });

  // before(a, b): group a happened before group b (its own entry is known to b).
  function before(a, b) {
    var A = D.groups[a], B = D.groups[b];
    return a !== b && A.vc[A.p] <= B.vc[A.p];
  }
  function groupTime(g) {
    var t = -1;
    D.groups[g].ev.forEach(function (i) { var x = D.events[i].t; if (x >= 0 && (t < 0 || x < t)) t = x; });
    return t;
  }
  function inWindow(g) {
    var t = groupTime(g);
    if (t < 0) return state.tmin === null && state.tmax === null;
    return (state.tmin === null || t >= state.tmin) && (state.tmax === null || t <= state.tmax);
  }

  function render() {
    var rows = {}, nrows = 0;
    D.procs.forEach(function (p, i) { if (!state.hiddenProcs[i]) rows[i] = nrows++; });
    var visible = {};
    var cols = [];
    var tlo = Infinity, thi = -Infinity;
    D.groups.forEach(function (g, gi) {
      if (rows[g.p] === undefined || !inWindow(gi)) return;
      visible[gi] = true;
      cols[g.col] = true;
      var t = groupTime(gi);
      if (t >= 0) { tlo = Math.min(tlo, t); thi = Math.max(thi, t); }
    });
    // Causal x: the visible columns, compacted. Real-time x: scaled.
    var colIndex = {}, ncols = 0;
    for (var c = 0; c < cols.length; c++) if (cols[c]) colIndex[c] = ncols++;
    var span = Math.max(ncols, 2) * CW;
    function x(gi) {
      if (state.xaxis === "real") {
        var t = groupTime(gi);
        if (t < 0 || thi <= tlo) return ML + 24;
        return ML + 24 + (t - tlo) / (thi - tlo) * span;
      }
      return ML + 24 + colIndex[D.groups[gi].col] * CW;
    }
    function y(gi) { return MT + 24 + rows[D.groups[gi].p] * RH; }
    var width = ML + 24 + span + 90, height = MT + 24 + Math.max(nrows - 1, 0) * RH + 60;
    var canvas = document.getElementById("canvas");
    canvas.textContent = "";
    var svg = el("svg", { width: width, height: height, "font-family": "sans-serif", "font-size": 11 }, canvas);
    var defs = el("defs", {}, svg);
    D.kinds.forEach(function (k, i) {
      var m = el("marker", { id: "arrow" + i, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", fill: k.color }, m);
    });
    function arrow(kind) {
      for (var i = 0; i < D.kinds.length; i++) if (D.kinds[i].name === kind) return "url(#arrow" + i + ")";
      return "";
    }
    D.procs.forEach(function (p, i) {
      if (rows[i] === undefined) return;
      var yy = MT + 24 + rows[i] * RH;
      var g = el("g", { "class": "proc", "data-id": p.id }, svg);
      el("line", { x1: ML, y1: yy, x2: width - 30, y2: yy }, g);
      text(p.label, { x: 12, y: yy + 4 }, g);
      if (p.cut) text(p.cut, { x: 12, y: yy + 16, fill: "#b00", "font-size": 9 }, g);
    });
    var related = null;
    if (state.selected >= 0 && visible[state.selected]) related = state.selected;
    D.msgs.forEach(function (m) {
      if (state.hiddenKinds[m.kind]) return;
      var sg = m.s >= 0 ? D.events[m.s].g : -1, rg = m.r >= 0 ? D.events[m.r].g : -1;
      if ((sg >= 0 && !visible[sg]) || (rg >= 0 && !visible[rg])) return;
      var x1, y1, x2, y2;
      if (sg >= 0 && rg >= 0) { x1 = x(sg); y1 = y(sg); x2 = x(rg); y2 = y(rg); }
      else if (sg >= 0) {
        x1 = x(sg); y1 = y(sg); x2 = x1 + 0.7 * CW; y2 = y1 + 0.35 * RH;
        var to = D.events[m.s].to, from = D.procs[D.groups[sg].p], ti = -1;
        D.procs.forEach(function (p, i) { if (p.id === to && p.daemon === from.daemon && p.cluster === from.cluster) ti = i; });
        if (ti >= 0 && rows[ti] !== undefined) y2 = y1 + (MT + 24 + rows[ti] * RH - y1) * 0.35;
      }
      else { x2 = x(rg); y2 = y(rg); x1 = x2 - 0.7 * CW; y1 = y2 - 0.35 * RH; }
      var dx = x2 - x1, dy = y2 - y1, l = Math.sqrt(dx * dx + dy * dy);
      if (l > 8 && rg >= 0) { x2 -= dx / l * 5; y2 -= dy / l * 5; }
      var line = el("line", { "class": "msg", "data-kind": m.kind, "data-frame": m.frame, x1: x1, y1: y1, x2: x2, y2: y2, stroke: color[m.kind] || "#444", "marker-end": arrow(m.kind) }, svg);
      if (m.dropped || sg < 0 || rg < 0) line.setAttribute("stroke-dasharray", m.dropped ? "4 3" : "2 2");
      if (related !== null && !(sg === related || rg === related)) line.classList.add("faded");
      line.addEventListener("mouseover", function () {
        var s = m.kind + " frame " + m.frame + (m.dropped ? " (refused by its receiver)" : "");
        if (m.s >= 0) s += "\nsend: " + D.events[m.s].desc;
        s += "\n" + (m.r >= 0 ? "recv: " + D.events[m.r].desc : "received by nobody traced (lost?)");
        info.textContent = s;
      });
    });
    D.groups.forEach(function (g, gi) {
      if (!visible[gi]) return;
      var e = D.events[g.ev[0]];
      var xx = x(gi), yy = y(gi);
      var grp = el("g", { "class": "ev", "data-ev": e.ev, "data-group": gi }, svg);
      el("circle", { "class": "ring", cx: xx, cy: yy, r: 9 }, grp);
      if (e.ev === "local") {
        el("path", { "class": "mark", d: "M" + xx + "," + (yy - 5) + " l5,5 l-5,5 l-5,-5 z", fill: "#222" }, grp);
        text(e.name, { "class": "name", x: xx + 2, y: yy - 9, transform: "rotate(-35 " + (xx + 2) + " " + (yy - 9) + ")" }, grp);
      } else if (e.ev === "drop") {
        el("path", { "class": "mark", d: "M" + (xx - 4) + "," + (yy - 4) + " l8,8 m0,-8 l-8,8", stroke: "#c00", "stroke-width": 2 }, grp);
        text("drop " + e.reason, { "class": "name", fill: "#c00", x: xx + 2, y: yy - 9, transform: "rotate(-35 " + (xx + 2) + " " + (yy - 9) + ")" }, grp);
      } else {
        el("circle", { cx: xx, cy: yy, r: 4, fill: color[e.kind] || "#444" }, grp);
      }
      var lab = state.label === "vector" ? e.vector : e.lamport;
      if (lab) text(lab, { "class": "label", x: xx, y: yy + 16, "text-anchor": "middle" }, grp);
      if (g.ev.some(function (i) { return D.events[i].hl; })) grp.classList.add("offending");
      if (related !== null) {
        if (gi === related) grp.classList.add("selected");
        else if (before(gi, related)) grp.classList.add("past");
        else if (before(related, gi)) grp.classList.add("future");
        else grp.classList.add("conc");
      }
      grp.addEventListener("mouseover", function () {
        var s = g.ev.map(function (i) { return D.events[i].desc; }).join("\n");
        if (related !== null && gi !== related) {
          s += "\n" + (before(gi, related) ? "happened before the selected event" : before(related, gi) ? "happened after the selected event" : "concurrent with the selected event");
        }
        info.textContent = s;
      });
      grp.addEventListener("click", function () { state.selected = gi; render(); });
    });
    document.body.dataset.ready = "1";
  }
  // The address's fragment can preselect a view, so a link shows what its
  // author saw: #select=G (a point's cone), hideproc=ID, hidekind=KIND,
  // label=vector, xaxis=real; joined with &.
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("="), k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
    if (k === "select") state.selected = Number(v);
    if (k === "hideproc") D.procs.forEach(function (p, j) { if (String(p.id) === v) state.hiddenProcs[j] = true; });
    if (k === "hidekind") state.hiddenKinds[v] = true;
    if (k === "label" || k === "xaxis") { state[k] = v; document.getElementById(k).value = v; }
  });
  document.querySelectorAll("#procFilter input").forEach(function (c, j) { c.checked = !state.hiddenProcs[j]; });
  document.querySelectorAll("#kindFilter input").forEach(function (c, j) { c.checked = !state.hiddenKinds[D.kinds[j].name]; });
  render();
})();
