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
  var state = { hiddenProcs: {}, hiddenKinds: {}, tmin: null, tmax: null, label: D.vector ? "vector" : "lamport", xaxis: "causal", selected: -1, heartbeats: D.heartbeats };
  var heartbeat = {};
  D.kinds.forEach(function (k) { heartbeat[k.name] = !!k.hb; });
  var color = {};
  D.kinds.forEach(function (k) { color[k.name] = k.color; });
  var info = document.getElementById("info");
  // dk is the name an arrow's kind goes by: its kind, and the operation
  // its frames carry if they do ("ring_probe want"); D.kinds are these.
  function dk(x) { return x.op ? x.kind + " " + x.op : x.kind; }
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
  document.getElementById("heartbeats").addEventListener("change", function (e) { state.heartbeats = e.target.checked; render(); });

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
    function gcol(gi) { var g = D.groups[gi]; return state.heartbeats ? g.col : g.fcol; }
    D.groups.forEach(function (g, gi) {
      if (rows[g.p] === undefined || !inWindow(gi) || (g.hb && !state.heartbeats)) return;
      visible[gi] = true;
      cols[gcol(gi)] = true;
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
      return ML + 24 + colIndex[gcol(gi)] * CW;
    }
    function y(gi) { return MT + 24 + rows[D.groups[gi].p] * RH; }
    var shownKinds = D.kinds.filter(function (k) { return !state.hiddenKinds[k.name] && (state.heartbeats || !k.hb); });
    var axisY = MT + 24 + Math.max(nrows - 1, 0) * RH + 40;
    var legendY = axisY + 46;
    var width = Math.max(ML + 24 + span + 90, 820);
    var legend = legendColumns(shownKinds, width), height = legendY + (Math.ceil(shownKinds.length / legend[1]) + 2) * 18 + 20;
    placed = [];
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
      var sp = p.label.indexOf(" "), cutY = yy + 16;
      if (p.label.length * 0.62 * 11 > ML - 16 && sp > 0) {
        // Too long for the margin (an NTP peer's address): two lines.
        el("title", {}, g).textContent = p.label;
        text(p.label.slice(0, sp), { x: 12, y: yy - 2, "font-size": 9 }, g);
        text(p.label.slice(sp + 1), { x: 12, y: yy + 10, "font-size": 9 }, g);
        cutY = yy + 22;
      } else {
        text(p.label, { x: 12, y: yy + 4 }, g);
      }
      if (p.cut) text(p.cut, { x: 12, y: cutY, fill: "#b00", "font-size": 9 }, g);
    });
    var related = null;
    if (state.selected >= 0 && visible[state.selected]) related = state.selected;
    var heads = [];
    D.msgs.forEach(function (m) {
      var k = dk(m);
      if (state.hiddenKinds[k] || (heartbeat[k] && !state.heartbeats)) return;
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
      var line = el("line", { "class": "msg", "data-kind": m.kind, "data-frame": m.frame, x1: x1, y1: y1, x2: x2, y2: y2, stroke: color[k] || "#444", "marker-end": arrow(k) }, svg);
      if (m.op) line.setAttribute("data-op", m.op);
      heads.push(headPoly(x1, y1, x2, y2));
      if (m.dropped || sg < 0 || rg < 0) line.setAttribute("stroke-dasharray", m.dropped ? "4 3" : "2 2");
      if (related !== null && !(sg === related || rg === related)) line.classList.add("faded");
      line.addEventListener("mouseover", function () {
        var s = k + " frame " + m.frame + (m.dropped ? " (refused by its receiver)" : "");
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
        place(text(e.name, { "class": "name" }, grp), xx, yy, NAME_SPOTS);
      } else if (e.ev === "drop") {
        el("path", { "class": "mark", d: "M" + (xx - 4) + "," + (yy - 4) + " l8,8 m0,-8 l-8,8", stroke: "#c00", "stroke-width": 2 }, grp);
        place(text("drop " + e.reason, { "class": "name", fill: "#c00" }, grp), xx, yy, NAME_SPOTS);
      } else {
        el("circle", { cx: xx, cy: yy, r: 4, fill: color[dk(e)] || "#444" }, grp);
      }
      var lab = state.label === "vector" ? e.vector : e.lamport;
      if (lab) place(text(lab, { "class": "label" }, grp), xx, yy, TIME_SPOTS);
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
    drawAxis(svg, visible, cols, colIndex, x, tlo, thi, axisY, span);
    drawLegend(svg, shownKinds, legendY, legend);
    document.body.dataset.ready = "1";

    // place puts label t at the first of spots around (px, py) whose box
    // (the browser's own) covers no arrowhead and no label placed
    // before, else the first clear of arrowheads, else the one covering
    // the fewest; data-box keeps the box (for the tests).
    function place(t, px, py, spots) {
      var pick = -1, clear = -1, fewest = 0, fewestHits = Infinity, boxes = [];
      for (var i = 0; i < spots.length; i++) {
        var b = spotBox(t, px, py, spots[i]);
        boxes.push(b);
        var hits = 0;
        heads.forEach(function (h) { if (overlap(b, h)) hits++; });
        if (hits < fewestHits) { fewest = i; fewestHits = hits; }
        if (hits > 0) continue;
        if (clear < 0) clear = i;
        if (placed.every(function (q) { return !overlap(b, q); })) { pick = i; break; }
      }
      if (pick < 0) pick = clear >= 0 ? clear : fewest;
      var box = spotBox(t, px, py, spots[pick]);
      placed.push(box);
      t.setAttribute("data-box", box.map(function (c) { return c[0].toFixed(1) + "," + c[1].toFixed(1); }).join(" "));
    }
  }
  var placed = [];
  // Where labels may go (as in svg.go): [dx, dy, anchor, slant].
  var TIME_SPOTS = [[0, 16, "middle", 0], [0, -8, "middle", 0], [8, 15, "start", 0], [-8, 15, "end", 0],
    [8, -7, "start", 0], [-8, -7, "end", 0], [0, 26, "middle", 0], [0, -18, "middle", 0], [12, 24, "start", 0], [-12, 24, "end", 0]];
  var NAME_SPOTS = [[2, -9, "start", -35], [7, -7, "start", -35], [2, -15, "start", -35], [4, 11, "start", 35],
    [9, 9, "start", 35], [-2, -9, "end", 35], [-4, 11, "end", -35]];
  // spotBox moves t to spot sp of (px, py) and returns its box's corners.
  function spotBox(t, px, py, sp) {
    var tx = px + sp[0], ty = py + sp[1];
    t.setAttribute("x", tx);
    t.setAttribute("y", ty);
    t.setAttribute("text-anchor", sp[2]);
    if (sp[3]) t.setAttribute("transform", "rotate(" + sp[3] + " " + tx + " " + ty + ")");
    else t.removeAttribute("transform");
    var bb = t.getBBox(), a = sp[3] * Math.PI / 180, c = Math.cos(a), s = Math.sin(a);
    return [[bb.x, bb.y], [bb.x + bb.width, bb.y], [bb.x + bb.width, bb.y + bb.height], [bb.x, bb.y + bb.height]].map(function (p) {
      var dx = p[0] - tx, dy = p[1] - ty;
      return [tx + dx * c - dy * s, ty + dx * s + dy * c];
    });
  }
  // headPoly is the arrowhead at the end of a line (the marker: 10 units
  // long, tip 1 unit past the end, 7 units to 1.3 px of stroke).
  function headPoly(x1, y1, x2, y2) {
    var dx = x2 - x1, dy = y2 - y1, l = Math.sqrt(dx * dx + dy * dy) || 1, ux = dx / l, uy = dy / l, k = 0.91;
    var bx = x2 - ux * 9 * k, by = y2 - uy * 9 * k, w = 5 * k;
    return [[x2 + ux * k, y2 + uy * k], [bx - uy * w, by + ux * w], [bx + uy * w, by - ux * w]];
  }
  // overlap: two convex polygons share interior points (separating axes).
  function overlap(a, b) {
    var polys = [a, b];
    for (var p = 0; p < 2; p++) {
      var P = polys[p];
      for (var i = 0; i < P.length; i++) {
        var j = (i + 1) % P.length, nx = P[j][1] - P[i][1], ny = P[i][0] - P[j][0];
        var ra = proj(a, nx, ny), rb = proj(b, nx, ny);
        if (ra[1] <= rb[0] || rb[1] <= ra[0]) return false;
      }
    }
    return true;
  }
  function proj(P, nx, ny) {
    var lo = Infinity, hi = -Infinity;
    P.forEach(function (c) { var v = c[0] * nx + c[1] * ny; lo = Math.min(lo, v); hi = Math.max(hi, v); });
    return [lo, hi];
  }
  function relTime(ms) { return ms < 1000 ? "+" + ms.toFixed(3) + "ms" : "+" + (ms / 1000).toFixed(3) + "s"; }
  // drawAxis: the real-time scale under the lines. Causal x: each
  // labelled column's earliest time; real-time x: evenly spaced ticks.
  function drawAxis(svg, visible, cols, colIndex, x, tlo, thi, ay, span) {
    var g = el("g", { "class": "axis" }, svg);
    el("line", { x1: ML, y1: ay, x2: ML + 24 + span + 20, y2: ay, stroke: "#999" }, g);
    text("real time", { x: 12, y: ay + 4, "font-size": 9, fill: "#555" }, g);
    var ticks = [];
    if (state.xaxis === "real") {
      if (thi > tlo) for (var i = 0; i <= 5; i++) {
        var t = tlo + (thi - tlo) * i / 5;
        ticks.push([ML + 24 + (t - tlo) / (thi - tlo) * span, t]);
      }
    } else {
      var first = {};
      D.groups.forEach(function (gr, gi) {
        if (!visible[gi]) return;
        var t = groupTime(gi), c = colIndex[state.heartbeats ? gr.col : gr.fcol];
        if (t >= 0 && (first[c] === undefined || t < first[c])) first[c] = t;
      });
      var last = -Infinity;
      Object.keys(first).map(Number).sort(function (a, b) { return a - b; }).forEach(function (c) {
        var xx = ML + 24 + c * CW;
        if (xx - last < 70) return;
        last = xx;
        ticks.push([xx, first[c]]);
      });
    }
    ticks.forEach(function (tk) {
      el("line", { x1: tk[0], y1: ay, x2: tk[0], y2: ay + 4, stroke: "#999" }, g);
      text(relTime(tk[1]), { x: tk[0], y: ay + 15, "font-size": 9, fill: "#555", "text-anchor": "middle" }, g);
    });
  }
  // legendColumns: the legend's column width (the longest kind's name,
  // as svg.go estimates it) and how many columns fit in width.
  function legendColumns(kinds, width) {
    var colw = 150;
    kinds.forEach(function (k) { colw = Math.max(colw, 30 + k.name.length * 0.62 * 11 + 16); });
    return [colw, Math.max(Math.floor((width - 12) / colw), 1)];
  }
  // drawLegend: the kinds drawn, the marks, and what is folded away.
  function drawLegend(svg, kinds, ly, cols) {
    var g = el("g", { "class": "legend" }, svg);
    kinds.forEach(function (k, i) {
      var lx = 12 + (i % cols[1]) * cols[0], yy = ly + Math.floor(i / cols[1]) * 18;
      el("line", { x1: lx, y1: yy, x2: lx + 24, y2: yy, stroke: k.color, "stroke-width": 2 }, g);
      text(k.name, { x: lx + 30, y: yy + 4 }, g);
    });
    var yy = ly + Math.ceil(kinds.length / cols[1]) * 18;
    el("path", { d: "M18," + (yy - 5) + " l5,5 l-5,5 l-5,-5 z", fill: "#222" }, g);
    text("local event", { x: 30, y: yy + 4 }, g);
    el("path", { d: "M158," + (yy - 4) + " l8,8 m0,-8 l-8,8", stroke: "#c00", "stroke-width": 2 }, g);
    text("refused frame", { x: 172, y: yy + 4 }, g);
    el("line", { x1: 302, y1: yy, x2: 326, y2: yy, stroke: "#444", "stroke-dasharray": "2 2" }, g);
    text("other end not traced (\u00d7 nobody received it)", { x: 332, y: yy + 4 }, g);
    if (!state.heartbeats) {
      var n = 0, names = [];
      D.kinds.forEach(function (k) {
        if (!k.hb) return;
        var c = 0;
        D.events.forEach(function (e) { if (e.ev === "send" && dk(e) === k.name) c++; });
        if (c > 0) { n += c; names.push(k.name); }
      });
      if (n > 0) text("heartbeats folded away: " + n + " sent (" + names.join(", ") + "), and their receipts; tick \u201cheartbeats\u201d to show them",
        { "class": "folded", x: 12, y: yy + 22, fill: "#555" }, g);
    }
  }
  // The address's fragment can preselect a view, so a link shows what its
  // author saw: #select=G (a point's cone), hideproc=ID, hidekind=KIND,
  // label=vector, xaxis=real; joined with &.
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("="), k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
    if (k === "select") state.selected = Number(v);
    if (k === "hideproc") D.procs.forEach(function (p, j) { if (String(p.id) === v) state.hiddenProcs[j] = true; });
    if (k === "hidekind") state.hiddenKinds[v] = true;
    if (k === "label" || k === "xaxis") state[k] = v;
    if (k === "heartbeats") state.heartbeats = v === "1" || v === "true";
  });
  document.getElementById("label").value = state.label;
  document.getElementById("xaxis").value = state.xaxis;
  document.getElementById("heartbeats").checked = state.heartbeats;
  document.querySelectorAll("#procFilter input").forEach(function (c, j) { c.checked = !state.hiddenProcs[j]; });
  document.querySelectorAll("#kindFilter input").forEach(function (c, j) { c.checked = !state.hiddenKinds[D.kinds[j].name]; });
  render();
})();
