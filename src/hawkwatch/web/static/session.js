/* hawkwatch session views: timeline, launch bars, flame graph and network waterfall, drawn as
   SVG from the JSON embedded in each session fragment (<script type="application/json"
   data-hw-data>). Vanilla JS, no dependency, no request: everything drawn comes from that JSON.
   Text is always set with textContent, never parsed as HTML. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var LABEL_W = 150;
  var COLORS = {
    "r-mem": "#3b7dd8", mem: "#6c9be0", "avl-mem": "#9bb7e0", cpu: "#d8843b",
    "threads-count": "#7a5bc7", fps: "#3bb08f", "gl-fps": "#5bc7a8",
    stall: "#d83b3b", gc: "#8f8f3b", span: "#3ba6b0", event: "#555", crash: "#b00020",
    dns: "#aed6f1", connect: "#f0b27a", tls: "#c39bd3", send: "#a9dfbf", ttfb: "#2e86c1",
    receive: "#48c9b0", total: "#aab7b8"
  };
  var TIMELINE_SERIES = ["r-mem", "mem", "cpu", "threads-count", "fps"];

  function el(name, attributes, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attributes) {
      if (Object.prototype.hasOwnProperty.call(attributes, key)) {
        node.setAttribute(key, String(attributes[key]));
      }
    }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, value, cls) {
    var node = el("text", { x: x, y: y, "class": cls || "hw-label" }, parent);
    node.textContent = value;
    return node;
  }

  function tip(node, value) {
    var title = el("title", {}, node);
    title.textContent = value;
    return node;
  }

  function ms(value) {
    if (value === null || value === undefined || !isFinite(value)) { return "–"; }
    if (Math.abs(value) >= 1000) { return (value / 1000).toFixed(2) + " s"; }
    return (Math.abs(value) < 100 ? value.toFixed(1) : value.toFixed(0)) + " ms";
  }

  function widthOf(box) {
    var width = box.clientWidth || (box.parentNode && box.parentNode.clientWidth) || 900;
    return Math.max(width, 320);
  }

  function clear(box) {
    while (box.firstChild) { box.removeChild(box.firstChild); }
  }

  function empty(box, message) {
    var p = document.createElement("p");
    p.className = "hw-empty";
    p.textContent = message;
    box.appendChild(p);
  }

  function axis(svg, x0, width, y, duration) {
    el("line", { x1: x0, x2: x0 + width, y1: y, y2: y, "class": "hw-axis" }, svg);
    var step = niceStep(duration / 8);
    for (var t = 0; t <= duration + 1e-9; t += step) {
      var x = x0 + (t / duration) * width;
      el("line", { x1: x, x2: x, y1: y, y2: y + 4, "class": "hw-axis" }, svg);
      text(svg, x, y + 15, formatSeconds(t, step), "hw-tick");
    }
  }

  function niceStep(raw) {
    if (!(raw > 0)) { return 1; }
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * power >= raw) { return steps[i] * power; }
    }
    return 10 * power;
  }

  function formatSeconds(t, step) {
    var digits = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
    return t.toFixed(digits) + " s";
  }

  /* ---- timeline ---- */
  function drawTimeline(box, data) {
    var timeline = data.timeline;
    clear(box);
    if (!timeline) { empty(box, "No timeline."); return; }
    var duration = Math.max(timeline.duration_s || 0, 1e-3);
    var width = widthOf(box);
    var plot = width - LABEL_W - 10;
    var lanes = [];
    var series = (timeline.series || []).filter(function (s) {
      return TIMELINE_SERIES.indexOf(s.collection) >= 0 && s.values.length;
    });
    if (series.some(function (s) { return s.collection === "r-mem"; })) {
      series = series.filter(function (s) { return s.collection !== "mem"; });
    }
    series.forEach(function (s) { lanes.push({ kind: "series", series: s, height: 54 }); });
    stallLanes(timeline).forEach(function (lane) { lanes.push(lane); });
    lanes.push({ kind: "bars", name: "GC pauses", items: timeline.gc_pauses || [],
      color: COLORS.gc, total: timeline.gc_pauses_total, label: function (m) {
        return "gen " + m.generation + " GC pause " + ms(m.duration_ms);
      } });
    lanes.push({ kind: "bars", name: "spans", items: timeline.spans || [], color: COLORS.span,
      total: timeline.spans_total, label: function (m) {
        return m.name + " " + ms(m.duration_ms) + (m.error ? " (error: " + m.error + ")" : "");
      } });
    lanes.push({ kind: "ticks", name: "events", items: timeline.events || [],
      color: COLORS.event, label: function (m) {
        return m.name + (m.extra ? " " + m.extra : "");
      } });
    lanes.push({ kind: "ticks", name: "crashes", items: timeline.crashes || [],
      color: COLORS.crash, label: function (m) { return m.title; } });
    var height = 10;
    lanes.forEach(function (lane) { height += (lane.height || 26) + 6; });
    var svg = el("svg", { width: width, height: height + 24, "class": "hw-svg",
      "data-hw-drawn": "timeline", role: "img" }, box);
    var scale = function (t) { return LABEL_W + Math.max(0, Math.min(1, t / duration)) * plot; };
    var y = 6;
    lanes.forEach(function (lane) {
      var h = lane.height || 26;
      lane.y = y;
      var g = el("g", { "class": "hw-lane",
        "data-lane": lane.lane || lane.name || lane.series.collection }, svg);
      if (lane.thread) { g.setAttribute("data-thread", lane.thread); }
      el("rect", { x: LABEL_W, y: y, width: plot, height: h, "class": "hw-lane-bg" }, g);
      if (lane.kind === "series") {
        drawSeries(g, lane.series, scale, y, h, duration);
      } else {
        var count = lane.total !== undefined ? lane.total : lane.items.length;
        text(g, 4, y + h / 2 + 4, lane.name + " (" + count + ")");
        lane.items.forEach(function (m) {
          var x = scale(m.offset_s);
          var mark;
          if (lane.kind === "bars") {
            var w = Math.max(2, scale(m.offset_s + m.duration_ms / 1000) - x);
            mark = el("rect", { x: x, y: y + 3, width: w, height: h - 6, fill: lane.color,
              "class": "hw-mark" }, g);
          } else {
            mark = el("path", { d: "M" + x + " " + (y + 2) + "l5 " + (h / 2 - 2) + "l-5 " +
              (h / 2 - 2) + "l-5 " + (2 - h / 2) + "z", fill: lane.color, "class": "hw-mark" },
              g);
          }
          tip(mark, "+" + m.offset_s.toFixed(3) + " s  " + lane.label(m));
          if (lane.lane === "stalls") { linkStall(box, mark, m); }
        });
      }
      y += h + 6;
    });
    if (timeline.exit_offset_s !== null && timeline.exit_offset_s !== undefined) {
      var ex = scale(timeline.exit_offset_s);
      tip(el("line", { x1: ex, x2: ex, y1: 2, y2: y, "class": "hw-exit-line" }, svg),
        "exit at +" + timeline.exit_offset_s.toFixed(3) + " s");
    }
    axis(svg, LABEL_W, plot, y, duration);
    crosshair(svg, lanes, plot, duration, 2, y);
  }

  /* Clicking a stall on the timeline opens its blocking stack below. */
  function linkStall(box, mark, stall) {
    mark.setAttribute("class", "hw-mark hw-link");
    mark.addEventListener("click", function () {
      var root = box.closest("[data-hw-session]");
      var found = null;
      if (root) {
        root.querySelectorAll("details.hw-stall").forEach(function (details) {
          if (Number(details.getAttribute("data-offset-s")) === stall.offset_s) { found = details; }
        });
      }
      if (found) {
        found.open = true;
        found.scrollIntoView({ block: "center" });
      }
    });
  }

  /* One lane per thread that stalled ("threads with stalls"); one empty lane when none did. */
  function stallLanes(timeline) {
    var stalls = timeline.stalls || [];
    var byThread = {};
    var order = [];
    stalls.forEach(function (m) {
      var thread = m.thread || "?";
      if (!byThread[thread]) { byThread[thread] = []; order.push(thread); }
      byThread[thread].push(m);
    });
    var label = function (m) {
      return "stall " + ms(m.duration_ms) + (m.thread ? " on " + m.thread : "") +
        (m.frame ? "\n" + m.frame : "");
    };
    if (!order.length) {
      return [{ kind: "bars", name: "stalls", items: [], color: COLORS.stall, total: 0,
        label: label }];
    }
    return order.map(function (thread) {
      return { kind: "bars", name: "stalls · " + thread, lane: "stalls", thread: thread,
        items: byThread[thread], color: COLORS.stall, label: label,
        total: order.length === 1 ? timeline.stalls_total : byThread[thread].length };
    });
  }

  /* A crosshair following the pointer, with each series' value at that moment. */
  function crosshair(svg, lanes, plot, duration, top, bottom) {
    var line = el("line", { x1: 0, x2: 0, y1: top, y2: bottom, "class": "hw-crosshair",
      visibility: "hidden" }, svg);
    var readouts = lanes.filter(function (l) { return l.kind === "series"; }).map(function (l) {
      return { lane: l, node: text(svg, 0, l.y + 12, "", "hw-readout") };
    });
    var clock = text(svg, 0, top + 10, "", "hw-readout");
    svg.addEventListener("mousemove", function (event) {
      var box = svg.getBoundingClientRect();
      var x = event.clientX - box.left;
      if (x < LABEL_W || x > LABEL_W + plot) { return hide(); }
      var t = ((x - LABEL_W) / plot) * duration;
      line.setAttribute("x1", x);
      line.setAttribute("x2", x);
      line.setAttribute("visibility", "visible");
      var anchor = x > LABEL_W + plot - 120 ? "end" : "start";
      var dx = anchor === "end" ? -4 : 4;
      readouts.forEach(function (r) {
        var value = valueAt(r.lane.series, t);
        r.node.textContent = value === null ? "" :
          (Math.round(value * 100) / 100) + " " + r.lane.series.unit;
        r.node.setAttribute("x", x + dx);
        r.node.setAttribute("text-anchor", anchor);
      });
      clock.textContent = "+" + t.toFixed(3) + " s";
      clock.setAttribute("x", x + dx);
      clock.setAttribute("y", bottom - 4);
      clock.setAttribute("text-anchor", anchor);
    });
    function hide() {
      line.setAttribute("visibility", "hidden");
      readouts.forEach(function (r) { r.node.textContent = ""; });
      clock.textContent = "";
    }
    svg.addEventListener("mouseleave", hide);
  }

  /* The value a step series holds at ``t`` (null before its first sample). */
  function valueAt(series, t) {
    var offsets = series.offsets_s;
    var low = 0;
    var high = offsets.length - 1;
    if (!offsets.length || t < offsets[0]) { return null; }
    while (low < high) {
      var mid = (low + high + 1) >> 1;
      if (offsets[mid] <= t) { low = mid; } else { high = mid - 1; }
    }
    return series.values[low];
  }

  function drawSeries(g, s, scale, y, h, duration) {
    var max = Math.max.apply(null, s.values);
    var min = Math.min(0, Math.min.apply(null, s.values));
    var span = max - min || 1;
    var vy = function (v) { return y + h - 3 - ((v - min) / span) * (h - 8); };
    var d = "";
    for (var i = 0; i < s.values.length; i++) {
      var x = scale(s.offsets_s[i]);
      d += (i === 0 ? "M" + x + " " + vy(s.values[i]) : "H" + x + "V" + vy(s.values[i]));
    }
    d += "H" + scale(duration);
    el("path", { d: d, fill: "none", stroke: COLORS[s.collection] || "#444",
      "stroke-width": 1.5, "class": "hw-series" }, g);
    text(g, 4, y + 16, s.label);
    text(g, 4, y + 32, "max " + (Math.round(max * 100) / 100) + " " + s.unit, "hw-tick-left");
    tip(g, s.label + ": " + s.count + " samples, max " + max + " " + s.unit);
  }

  /* ---- launch ---- */
  function drawLaunch(box, data) {
    var launch = data.launch;
    clear(box);
    if (!launch || !launch.phases || !launch.phases.length) { return; }
    var width = widthOf(box);
    var plot = width - LABEL_W - 10;
    var total = 0;
    launch.phases.forEach(function (p) { total = Math.max(total, p.offset_ms); });
    if (launch.duration_ms) { total = Math.max(total, launch.duration_ms); }
    total = total || 1;
    var svg = el("svg", { width: width, height: 46, "class": "hw-svg", "data-hw-drawn": "launch" },
      box);
    text(svg, 4, 20, "launch " + ms(launch.duration_ms));
    var palette = ["#7fb3d5", "#f0b27a", "#c39bd3", "#a9dfbf", "#5dade2", "#48c9b0", "#f5b7b1"];
    launch.phases.forEach(function (p, i) {
      if (!(p.delta_ms > 0)) { return; }
      var x = LABEL_W + ((p.offset_ms - p.delta_ms) / total) * plot;
      var w = Math.max(1, (p.delta_ms / total) * plot);
      tip(el("rect", { x: x, y: 6, width: w, height: 20, fill: palette[i % palette.length],
        "class": "hw-mark" }, svg), p.label + ": " + ms(p.delta_ms) + " (at " +
        ms(p.offset_ms) + ")");
      if (w > 60) { text(svg, x + 3, 20, p.label, "hw-bar-label"); }
    });
    text(svg, LABEL_W, 42, "0", "hw-tick-left");
    text(svg, LABEL_W + plot, 42, ms(total), "hw-tick-end");
  }

  /* ---- flame graph ---- */
  function FlameGraph(box, flame, button, search) {
    this.box = box;
    this.flame = flame;
    this.focus = -1;
    this.query = "";
    var count = flame.nodes.length;
    this.children = [];
    this.roots = [];
    for (var i = 0; i < count; i++) { this.children.push([]); }
    for (var j = 0; j < count; j++) {
      var parent = flame.nodes[j][0];
      if (parent < 0) { this.roots.push(j); } else { this.children[parent].push(j); }
    }
    var self = this;
    if (button) { button.addEventListener("click", function () { self.zoom(-1); }); }
    if (search) {
      search.addEventListener("input", function () {
        self.query = search.value.trim().toLowerCase();
        self.draw();
      });
    }
  }

  FlameGraph.prototype.count = function (i) {
    return i < 0 ? this.flame.total : this.flame.nodes[i][2];
  };

  FlameGraph.prototype.label = function (i) {
    return i < 0 ? "all" : this.flame.frames[this.flame.nodes[i][1]];
  };

  FlameGraph.prototype.kids = function (i) { return i < 0 ? this.roots : this.children[i]; };

  FlameGraph.prototype.zoom = function (i) {
    this.focus = i;
    this.draw();
  };

  FlameGraph.prototype.draw = function () {
    var box = this.box;
    clear(box);
    var width = widthOf(box);
    var rowH = 18;
    var ancestors = [];
    for (var a = this.focus; a >= 0; a = this.flame.nodes[a][0]) { ancestors.unshift(a); }
    ancestors.unshift(-1);
    var rows = [];
    var self = this;
    ancestors.forEach(function (node, depth) {
      rows.push({ node: node, depth: depth, x: 0, w: width });
    });
    var focusCount = this.count(this.focus);
    var maxDepth = ancestors.length - 1;
    var queue = [{ node: this.focus, depth: ancestors.length - 1, x: 0, w: width }];
    for (var q = 0; q < queue.length; q++) {
      var item = queue[q];
      var x = item.x;
      this.kids(item.node).forEach(function (child) {
        var w = (self.count(child) / focusCount) * width;
        if (w >= 0.5) {
          var entry = { node: child, depth: item.depth + 1, x: x, w: w };
          rows.push(entry);
          queue.push(entry);
          maxDepth = Math.max(maxDepth, entry.depth);
        }
        x += w;
      });
    }
    var svg = el("svg", { width: width, height: (maxDepth + 1) * rowH + 2, "class": "hw-svg",
      "data-hw-drawn": "flame", "data-focus": this.focus }, box);
    rows.forEach(function (r) {
      var name = self.label(r.node);
      var cls = "hw-frame" + (r.node === self.focus ? " hw-focus" : "");
      if (self.query) {
        cls += name.toLowerCase().indexOf(self.query) >= 0 ? " hw-match" : " hw-dim";
      }
      var g = el("g", { "class": cls, "data-node": r.node, tabindex: 0, role: "button",
        transform: "translate(" + r.x + "," + r.depth * rowH + ")" }, svg);
      var share = (100 * self.count(r.node) / self.flame.total).toFixed(1);
      el("rect", { width: Math.max(r.w - 1, 0.5), height: rowH - 1, fill: flameColor(self
        .label(r.node)), rx: 2 }, g);
      var chars = Math.floor((r.w - 6) / 6.5);
      if (chars >= 3) {
        text(g, 3, 13, name.length > chars ? name.slice(0, chars - 1) + "…" : name,
          "hw-frame-label");
      }
      tip(g, self.label(r.node) + "\n" + self.count(r.node) + " samples, " + share + " %");
      g.addEventListener("click", function () { self.zoom(r.node); });
      g.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          self.zoom(r.node);
        }
      });
    });
  };

  function flameColor(name) {
    var hash = 0;
    var func = name.split(" (")[0];
    for (var i = 0; i < func.length; i++) { hash = (hash * 31 + func.charCodeAt(i)) >>> 0; }
    if (name === "all" || name.indexOf("thread ") === 0) { return "#c8c8c8"; }
    return "hsl(" + (20 + (hash % 40)) + ", " + (70 + (hash % 20)) + "%, " +
      (55 + (hash % 15)) + "%)";
  }

  /* ---- network waterfall ---- */
  var PHASES = ["dns", "connect", "tls", "send", "ttfb", "receive"];

  function drawNetwork(box, data) {
    var network = data.network;
    clear(box);
    if (!network || !network.requests || !network.requests.length) {
      empty(box, "No HTTP requests.");
      return;
    }
    var width = widthOf(box);
    var labelW = Math.min(320, width / 3);
    var plot = width - labelW - 10;
    var requests = network.requests;
    var first = requests[0].offset_s;
    var end = first;
    requests.forEach(function (r) {
      end = Math.max(end, r.offset_s + (r.total_ms || 0) / 1000);
    });
    var span = Math.max(end - first, 1e-3);
    var rowH = 20;
    var svg = el("svg", { width: width, height: requests.length * rowH + 44, "class": "hw-svg",
      "data-hw-drawn": "network" }, box);
    var scale = function (t) { return labelW + ((t - first) / span) * plot; };
    requests.forEach(function (r, i) {
      var y = i * rowH + 2;
      var failed = r.error || (r.status !== null && r.status >= 400);
      var g = el("g", { "class": "hw-request" + (failed ? " hw-failed" : ""), "data-row": i },
        svg);
      var name = r.method + " " + r.url;
      var chars = Math.floor(labelW / 6.5) - 6;
      text(g, 4, y + 14, (r.status !== null ? r.status : (r.error ? "ERR" : "…")) + " " +
        (name.length > chars ? name.slice(0, chars - 1) + "…" : name));
      var x = scale(r.offset_s);
      var parts = [];
      PHASES.forEach(function (p) {
        var value = r[p + "_ms"];
        if (value > 0) { parts.push([p, value]); }
      });
      if (!parts.length && r.total_ms > 0) { parts.push(["total", r.total_ms]); }
      parts.forEach(function (part) {
        var w = Math.max(1, (part[1] / 1000 / span) * plot);
        el("rect", { x: x, y: y + 3, width: w, height: rowH - 6, fill: COLORS[part[0]],
          "class": "hw-phase", "data-phase": part[0] }, g);
        x += w;
      });
      var detail = parts.map(function (p) { return p[0] + " " + ms(p[1]); }).join(", ");
      tip(g, name + "\n" + (r.error ? "error: " + r.error + "\n" : "") + "total " +
        ms(r.total_ms) + (detail ? " — " + detail : "") +
        (r.on_loop_thread ? "\nblocking the event loop" : ""));
    });
    var ly = requests.length * rowH + 16;
    var lx = labelW;
    PHASES.forEach(function (p) {
      el("rect", { x: lx, y: ly - 9, width: 10, height: 10, fill: COLORS[p] }, svg);
      text(svg, lx + 13, ly, p, "hw-tick-left");
      lx += 75;
    });
    text(svg, labelW + plot, ly + 18, "+" + span.toFixed(3) + " s", "hw-tick-end");
  }

  /* ---- wiring ---- */
  function readData(root) {
    var holder = root.querySelector("script[data-hw-data]");
    return holder ? JSON.parse(holder.textContent || "{}") : {};
  }

  function render(root) {
    if (root.getAttribute("data-hw-ready") === "1") { return; }
    var data = readData(root);
    var views = {};
    root.querySelectorAll("[data-hw-view]").forEach(function (box) {
      views[box.getAttribute("data-hw-view")] = box;
    });
    var draw = function () {
      if (views.timeline) { drawTimeline(views.timeline, data); }
      if (views.launch) { drawLaunch(views.launch, data); }
      if (views.network) { drawNetwork(views.network, data); }
      if (views.flame) {
        if (flame) { flame.draw(); } else { empty(views.flame, "No CPU profile."); }
      }
    };
    var flame = null;
    if (views.flame && data.flame && data.flame.nodes && data.flame.nodes.length) {
      flame = new FlameGraph(views.flame, data.flame, root.querySelector(".hw-reset"),
        root.querySelector(".hw-search"));
    }
    draw();
    var pending = null;
    window.addEventListener("resize", function () {
      if (pending) { window.clearTimeout(pending); }
      pending = window.setTimeout(draw, 150);
    });
    root.setAttribute("data-hw-ready", "1");
  }

  function renderAll() {
    document.querySelectorAll("[data-hw-session]").forEach(render);
  }

  window.hawkwatchSession = { render: render, renderAll: renderAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", renderAll);
  } else {
    renderAll();
  }
})();
