/* Charts that fit their column: every Altair chart of the book is embedded through grpoEmbed.
 *
 * The book's charts are Vega-Lite specs drawn in the browser (widgets.rendering's book renderer
 * writes `grpoEmbed(outputDiv, spec, embedOpt, vegaEmbed)` where Altair's html renderer writes
 * `vegaEmbed(outputDiv, spec, embedOpt)`). A chart wider than its column used to be scaled down by
 * CSS with its text (a 620 px chart on a 342 px phone column drew 10 px labels at 5.5 px). Here:
 *
 * 1. Every font size below MIN_FONT (10 px) in the spec is raised to MIN_FONT.
 * 2. The chart is drawn. If it is wider than its container, the spec is laid out for a narrow
 *    column and drawn again: side-by-side panels are stacked (top-level hconcat -> vconcat,
 *    concat/facet columns -> 1, a facet's column field -> one wrapped column), a legend on the
 *    right or left goes under the plot, a title too long for the column is broken into lines.
 * 3. If it is still too wide, each panel's numeric width is reduced by the excess (not below
 *    MIN_WIDTH) and it is drawn again (twice at most). Heights are kept. If narrower panels did not
 *    make it much narrower, parts of fixed size set its width: each panel gets the column's room
 *    (less the axes), long texts at fixed pixels in any layered view (a concatenation's panels
 *    too) are broken into lines, and, when a legend reaches past the column, legends sharing a
 *    side go one under another with long labels broken. Only what still overflows then is scaled
 *    down by CSS (grpo.css: max-width 100%).
 *
 * Params, their bindings (sliders, radios) and the Vega expressions are untouched: a narrow layout
 * keeps the top-level params, and vega-embed renders the bindings once per chart. When the
 * container later changes width across the chart's natural width (a rotated phone, a resized
 * window, a chart first shown in a closed dropdown), the chart is laid out again, its params
 * keeping the values a reader set.
 *
 * The embedded element keeps its Vega view (`el.grpoView`), its natural (unscaled) width
 * (`el.dataset.grpoNatural`), the spec it drew (`el.grpoSpec`) and which layout it got (`el.dataset.grpoLayout`: "natural",
 * "stacked" or "narrowed"), which the browser tests read.
 *
 * In a notebook (Jupyter, Colab) this file is not loaded and Altair's own vegaEmbed call runs.
 * The spec functions are plain functions of JSON (tested with node in tests/test_rendering.py).
 */
(function (root) {
  "use strict";

  var MIN_FONT = 10;      // px, every text of a chart at natural size
  var MIN_WIDTH = 140;    // px, the narrowest a panel is made
  var FONT_KEY = /fontsize$/i;
  var LEGEND_CHANNELS = ["color", "fill", "stroke", "shape", "size", "opacity", "fillOpacity",
                         "strokeOpacity", "strokeDash", "strokeWidth"];

  function clone(x) { return JSON.parse(JSON.stringify(x)); }
  function isObj(x) { return x !== null && typeof x === "object" && !Array.isArray(x); }
  function markType(mark) { return isObj(mark) ? mark.type : mark; }

  /* Raise every font size below MIN_FONT (config, marks, axes, legends, headers, titles and a
     text mark's size channel) to MIN_FONT; returns the number of values raised. In place. */
  function floorFonts(spec) {
    var raised = 0;
    function walk(o, parentMark) {
      if (Array.isArray(o)) { o.forEach(function (v) { walk(v, parentMark); }); return; }
      if (!isObj(o)) return;
      var mark = o.mark !== undefined ? markType(o.mark) : parentMark;
      Object.keys(o).forEach(function (k) {
        var v = o[k];
        if (FONT_KEY.test(k) && typeof v === "number" && v < MIN_FONT) { o[k] = MIN_FONT; raised++; }
      });
      // A text mark's "size" is its font size (mark property, config.text, encoding value).
      if (isObj(o.mark) && o.mark.type === "text" && typeof o.mark.size === "number" && o.mark.size < MIN_FONT) {
        o.mark.size = MIN_FONT; raised++;
      }
      if (mark === "text" && isObj(o.encoding) && isObj(o.encoding.size) &&
          typeof o.encoding.size.value === "number" && o.encoding.size.value < MIN_FONT) {
        o.encoding.size.value = MIN_FONT; raised++;
      }
      if (isObj(o.config) && isObj(o.config.text) && typeof o.config.text.size === "number" &&
          o.config.text.size < MIN_FONT) { o.config.text.size = MIN_FONT; raised++; }
      Object.keys(o).forEach(function (k) { if (k !== "data" && k !== "datasets") walk(o[k], mark); });
    }
    walk(spec, undefined);
    return raised;
  }

  /* Break a title's text into lines of at most `width` px (about 0.6 em a character). */
  function wrapText(text, width, fontSize) {
    if (Array.isArray(text)) {  // lines already: each one broken further if too long
      var out = [];
      text.forEach(function (line) { out = out.concat(wrapText(line, width, fontSize)); });
      return out.length === text.length ? text : out;
    }
    if (typeof text !== "string") return text;
    var perLine = Math.max(12, Math.floor(width / (0.6 * fontSize)));
    if (text.length <= perLine) return text;
    var lines = [], line = "";
    text.split(" ").forEach(function (word) {
      if (line && (line + " " + word).length > perLine) { lines.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    if (line) lines.push(line);
    return lines;
  }

  function wrapTitle(o, width) {
    if (o.title === undefined || o.title === null) return;
    if (typeof o.title === "string") { o.title = wrapText(o.title, width, 13); return; }
    if (isObj(o.title)) {
      var fs = typeof o.title.fontSize === "number" ? o.title.fontSize : 13;
      o.title.text = wrapText(o.title.text, width, fs);
      if (o.title.subtitle !== undefined) {
        var sfs = typeof o.title.subtitleFontSize === "number" ? o.title.subtitleFontSize : 11;
        o.title.subtitle = wrapText(o.title.subtitle, width, sfs);
      }
    }
  }

  /* The encoding channels of `enc` that draw a legend. */
  function legendDefs(enc) {
    return LEGEND_CHANNELS.map(function (ch) { return enc[ch]; }).filter(function (def) {
      return isObj(def) && def.legend !== null &&
        (def.field !== undefined || def.condition !== undefined || def.datum !== undefined);
    });
  }

  /* A Vega expression breaking the string `e` into lines of at most `n` characters, at spaces. */
  function wrapExpr(e, n) {
    return "split(trim(replace(" + e + ", regexp('(.{1," + n + "})( +|$)', 'g'), '$1\\n')), '\\n')";
  }

  /* Every view of the spec (the spec itself, concat/layer children, a facet's or repeat's inner
     spec), with its parent's key. */
  function views(spec, fn) {
    (function walk(o) {
      if (!isObj(o)) return;
      fn(o);
      ["hconcat", "vconcat", "concat", "layer"].forEach(function (k) {
        if (Array.isArray(o[k])) o[k].forEach(walk);
      });
      if (isObj(o.spec)) walk(o.spec);
    })(spec);
  }

  /* The narrow layout of a spec, in place: panels stacked, side legends moved under the plot,
     titles wrapped to `width`. Returns the list of changes made (empty: nothing to do). */
  function stack(spec, width) {
    var changes = [];
    var config = isObj(spec.config) ? spec.config : null;
    var configOrient = config && isObj(config.legend) ? config.legend.orient : undefined;
    views(spec, function (o) {
      if (Array.isArray(o.hconcat)) {
        o.vconcat = o.hconcat; delete o.hconcat; changes.push("hconcat->vconcat");
      }
      if ((Array.isArray(o.concat) || o.facet !== undefined || o.repeat !== undefined) &&
          typeof o.columns === "number" && o.columns > 1) {
        o.columns = 1; changes.push("columns->1");
      }
      // A facet by a column field: one wrapped column (headers stay on top of each panel).
      if (isObj(o.facet) && o.facet.column !== undefined && o.facet.row === undefined) {
        o.facet = o.facet.column; o.columns = 1; changes.push("facet column->wrapped");
      }
      if (isObj(o.repeat) && Array.isArray(o.repeat.column) && o.repeat.row === undefined) {
        o.repeat = o.repeat.column; o.columns = 1; changes.push("repeat column->wrapped");
      }
      if (isObj(o.encoding)) {
        var enc = o.encoding;
        if (enc.column !== undefined && enc.row === undefined && enc.facet === undefined) {
          enc.facet = enc.column; enc.facet.columns = 1; delete enc.column;
          changes.push("encoding column->facet");
        }
        var defs = legendDefs(enc);
        var laidOut = defs.some(function (d) {
          return isObj(d.legend) && (d.legend.direction !== undefined || d.legend.columns !== undefined);
        });
        defs.forEach(function (def) {
          var legend = isObj(def.legend) ? def.legend : {};
          var orient = legend.orient !== undefined ? legend.orient : configOrient;
          if (orient === undefined || orient === "right" || orient === "left") {
            legend.orient = "bottom";
            if (!laidOut) legend.direction = "vertical";
            def.legend = legend; changes.push("legend->bottom");
          }
        });
      }
      wrapTitle(o, width);
    });
    if (configOrient === "right" || configOrient === "left") {
      config.legend.orient = "bottom"; changes.push("config legend->bottom");
    }
    return changes;
  }

  /* The pixel positions (x, x2 given as a value) and text limits of a view's marks, scaled with
     its width from `from` to `to` px (a label placed at the right edge stays there). */
  function scalePositions(o, from, to) {
    (function walk(v) {
      if (!isObj(v)) return;
      if (isObj(v.encoding)) {
        ["x", "x2"].forEach(function (ch) {
          var d = v.encoding[ch];
          if (isObj(d) && typeof d.value === "number") d.value = Math.round(d.value * to / from);
        });
      }
      if (Array.isArray(v.layer)) v.layer.forEach(walk);
    })(o);
  }

  /* Reduce every panel's numeric width by `excess` px, relative to the widest panel (a panel
     narrower than the widest by more than the excess keeps its width), not below MIN_WIDTH;
     legends above or under a plot get one column, facet headers wrap to their panel's width.
     Returns true when something changed. */
  function narrow(spec, excess) {
    var widest = widestPanel(spec), changed = false;
    var cap = Math.max(MIN_WIDTH, Math.floor(widest - excess));
    // What the narrowest panels cannot absorb comes off long y-axis labels (ellipsis), down to 80 px.
    var rest = Math.max(0, Math.ceil(MIN_WIDTH - (widest - excess)));
    views(spec, function (o) {
      if (typeof o.width === "number" && o.width > cap) {
        scalePositions(o, o.width, cap);
        o.width = cap; changed = true;
      }
      if (isObj(o.encoding)) {
        var y = o.encoding.y;
        if (rest > 0 && isObj(y) && isObj(y.axis) && typeof y.axis.labelLimit === "number" && y.axis.labelLimit > 80) {
          y.axis.labelLimit = Math.max(80, y.axis.labelLimit - rest); changed = true;
        }
        legendDefs(o.encoding).forEach(function (def) {
          var legend = isObj(def.legend) ? def.legend : {};
          if (legend.columns !== 1 || legend.direction !== "vertical") {
            legend.columns = 1; legend.direction = "vertical"; def.legend = legend; changed = true;
          }
        });
      }
      if (isObj(o.facet)) {
        var facets = o.facet.field !== undefined ? [o.facet] : [o.facet.row, o.facet.column];
        facets.forEach(function (f) {
          if (!isObj(f) || f.header === null) return;
          var header = isObj(f.header) ? f.header : {};
          var fs = typeof header.labelFontSize === "number" ? header.labelFontSize : 11;
          if (header.labelExpr === undefined) {
            header.labelExpr = wrapExpr("datum.label", Math.max(12, Math.floor(cap / (0.6 * fs))));
            changed = true;
          }
          if (typeof header.labelLimit === "number" && header.labelLimit > cap) {
            header.labelLimit = cap; changed = true;
          }
          f.header = header;
        });
      }
    });
    return changed;
  }

  /* Legends in a column `width` px wide, in place: the legends sharing a side of a plot (above or
     under it) are placed one under the other instead of side by side, and a label longer than the
     room beside its symbol (its labelLimit 0, unlimited, or above the room) is broken into lines
     at spaces. Returns true when something changed. */
  function legends(spec, width) {
    var changed = false, any = false;
    var config = isObj(spec.config) ? spec.config : {};
    var base = isObj(config.legend) ? config.legend : {};
    var room = Math.max(60, Math.floor(width - 24));  // the symbol and its padding take the rest
    views(spec, function (o) {
      if (!isObj(o.encoding)) return;
      legendDefs(o.encoding).forEach(function (def) {
        any = true;
        var legend = isObj(def.legend) ? def.legend : {};
        var limit = legend.labelLimit !== undefined ? legend.labelLimit
          : base.labelLimit !== undefined ? base.labelLimit : 160;  // Vega's default
        if (legend.labelExpr !== undefined || typeof limit !== "number" || (limit > 0 && limit <= room)) return;
        var fs = typeof legend.labelFontSize === "number" ? legend.labelFontSize
          : typeof base.labelFontSize === "number" ? base.labelFontSize : 10;
        legend.labelExpr = wrapExpr("datum.label", Math.max(12, Math.floor(room / (0.6 * fs))));
        legend.labelLimit = room;
        def.legend = legend; changed = true;
      });
    });
    if (any) {
      var layout = isObj(base.layout) ? base.layout : {};
      ["top", "bottom"].forEach(function (side) {
        var l = isObj(layout[side]) ? layout[side] : {};
        if (l.direction !== "vertical") { l.direction = "vertical"; layout[side] = l; changed = true; }
      });
      base.layout = layout; config.legend = base; spec.config = config;
    }
    return changed;
  }

  /* Whether a legend of the drawn `view` reaches past `width` px from the chart's left edge. */
  function legendsOverflow(view, width) {
    if (!view) return false;
    var root = view.scenegraph().root, left = Infinity, right = -Infinity;
    (function walk(mark, ox) {
      (mark.items || []).forEach(function (item) {
        var b = item.bounds;
        if (!b) return;
        left = Math.min(left, ox + b.x1);
        if (mark.role === "legend") { right = Math.max(right, ox + b.x2); return; }
        (item.items || []).forEach(function (m) { walk(m, ox + (item.x || 0)); });
      });
    })(root, 0);
    return right > -Infinity && right - left > width + 0.5;
  }

  /* The largest numeric width of the spec's panels (0: none). */
  function widestPanel(spec) {
    var widest = 0;
    views(spec, function (o) { if (typeof o.width === "number") widest = Math.max(widest, o.width); });
    return widest;
  }

  /* Set every panel's numeric width to at most `width` px (positions scaled with it). */
  function capWidths(spec, width) {
    views(spec, function (o) {
      if (typeof o.width === "number" && o.width > width) { scalePositions(o, o.width, width); o.width = width; }
    });
  }

  /* Set every panel's numeric width to its width in `original` (the same spec, not narrowed) but
     at most `width` px, positions scaled with it: narrowed panels widen again up to `width`.
     Returns true when a width changed. */
  function fitWidths(spec, original, width) {
    var widths = [], changed = false;
    views(original, function (o) { widths.push(o.width); });
    var i = 0;
    views(spec, function (o) {
      var w = widths[i++];
      if (typeof o.width !== "number" || typeof w !== "number") return;
      var target = Math.min(w, width);
      if (target !== o.width) { scalePositions(o, o.width, target); o.width = target; changed = true; }
    });
    return changed;
  }

  /* The widest text item of each text mark of a drawn view (mark name -> px), read from its
     scenegraph: how long its annotations are at the natural layout. */
  function textWidths(view) {
    var out = {};
    (function walk(mark) {
      if (!mark) return;
      (mark.items || []).forEach(function (item) {
        if (mark.marktype === "text" && mark.name && item.bounds) {
          var w = item.bounds.x2 - item.bounds.x1;
          if (w > (out[mark.name] || 0) && (typeof item.text === "string" || Array.isArray(item.text))) {
            out[mark.name + " text"] = Array.isArray(item.text) ? item.text.join("\n")
              : item.lineBreak ? item.text.split(item.lineBreak).join("\n") : item.text;
          }
          out[mark.name] = Math.max(out[mark.name] || 0, w);
          // a text drawn on several lines (its own line breaks): how many, at most
          var lines = typeof item.text === "string" && typeof item.lineBreak === "string" && item.lineBreak
            ? item.text.split(item.lineBreak).length : Array.isArray(item.text) ? item.text.length : 1;
          if (lines > 1) out[mark.name + " lines"] = Math.max(out[mark.name + " lines"] || 1, lines);
        } else if (item.items) item.items.forEach(walk);
      });
    })(view && view.scenegraph().root);
    return out;
  }

  /* Annotations of a chart laid out for panels `width` px wide (each layered view of the spec, a
     concatenation's panels too, for its own width when narrower): a text placed at fixed pixels
     (x and y given as values: a verdict, a note above or under the plot) that was measured wider
     than its room is broken into lines at spaces (lines it already has are kept), and the texts of
     a stack are moved apart so that the added lines overlap none (texts standing on their
     baseline, above the plot, move up; texts hanging from their top move down). A right-aligned
     text (at a number of pixels or at the plot's right edge, "width") stays on the row of the
     left-aligned text beside it when both fit in the row, moving with it; otherwise it joins the
     left-aligned stack as a row of its own.
     `measured`: mark name -> drawn width at the natural layout (and "<name> lines": the lines of a
     text drawn on several); a text not drawn then (its data filtered out) is estimated from its
     characters where the spec holds them. Returns true when a text changed. */
  function annotations(spec, width, measured) {
    var changed = false;
    // Vega-Lite's names of the views (a concatenation's "concat_0", its layers' "concat_0_layer_2"),
    // by which the drawn marks were measured
    (function walk(o, name) {
      if (!isObj(o)) return;
      if (typeof o.name === "string") name = o.name;
      var prefix = name ? name + "_" : "";
      if (Array.isArray(o.layer)) {
        var w = typeof o.width === "number" ? Math.min(width, o.width) : width;
        if (layerAnnotations(o, w, measured || {}, prefix)) changed = true;
        o.layer.forEach(function (l, i) { walk(l, prefix + "layer_" + i); });
      }
      ["hconcat", "vconcat", "concat"].forEach(function (k) {
        if (Array.isArray(o[k])) o[k].forEach(function (c, i) { walk(c, prefix + "concat_" + i); });
      });
      if (isObj(o.spec)) walk(o.spec, prefix + "child");
    })(spec, "");
    return changed;
  }

  /* The longest text a layer can show, estimated from the characters of its value or of its field
     in the layer's inline data (0: unknown). */
  function estimatedWidth(l, t, fs, bold) {
    var longest = 0;
    if (typeof t.value === "string") longest = t.value.length;
    else if (isObj(l.data) && Array.isArray(l.data.values)) {
      l.data.values.forEach(function (row) {
        if (isObj(row) && row[t.field] !== undefined && row[t.field] !== null) {
          String(row[t.field]).split("\n").forEach(function (line) { longest = Math.max(longest, line.length); });
        }
      });
    }
    return longest * (bold ? 0.68 : 0.62) * fs;
  }

  /* The longest string literal of the expression that calculates `field` in layer `l` (0: none). */
  function longestLiteral(l, field) {
    var most = 0;
    (l.transform || []).forEach(function (t) {
      if (!isObj(t) || t.as !== field || typeof t.calculate !== "string") return;
      (t.calculate.match(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g) || []).forEach(function (lit) {
        most = Math.max(most, lit.length - 2);
      });
    });
    return most;
  }

  /* `text` broken into lines of at most `chars` characters at spaces (its own line breaks kept),
     as the Vega expression of layerAnnotations breaks it. */
  function breakLines(text, chars) {
    return text.replace(new RegExp("(.{1," + chars + "})( +|$|\n)", "g"), "$1\n").trim().split("\n");
  }

  function layerAnnotations(spec, width, measured, prefix) {
    var items = [];
    spec.layer.forEach(function (l, i) {
      if (!isObj(l) || markType(l.mark) !== "text" || !isObj(l.encoding)) return;
      var e = l.encoding, t = e.text;
      var align = isObj(l.mark) && l.mark.align ? l.mark.align : "center";
      if (!isObj(e.x) || !(typeof e.x.value === "number" || (e.x.value === "width" && align === "right")) ||
          !isObj(e.y) || typeof e.y.value !== "number") return;
      if (!isObj(t) || t.condition !== undefined || t.format !== undefined || t.aggregate !== undefined ||
          !((typeof t.field === "string" && (t.type === undefined || t.type === "nominal")) ||
            typeof t.value === "string")) return;
      if (!isObj(l.mark)) l.mark = {type: "text"};
      var m = l.mark;
      if (typeof m.dy !== "number" && m.dy !== undefined) return;
      var fs = typeof m.fontSize === "number" ? m.fontSize : 11;
      var name = (l.name || (prefix || "") + "layer_" + i) + "_marks";
      items.push({l: l, m: m, e: e, i: i, fs: fs, lh: Math.round(fs * 1.25), lines: 1,
                  own: measured[name + " lines"] || 1, text: measured[name + " text"],
                  measured: measured[name] || estimatedWidth(l, t, fs, m.fontWeight === "bold"),
                  p: e.y.value + (m.dy || 0), baseline: m.baseline || "middle"});
    });
    var left = items.filter(function (it) { return (it.m.align || "center") === "left"; });
    if (!left.length) return false;
    var dx = typeof left[0].m.dx === "number" ? left[0].m.dx : 0, x0 = left[0].e.x.value;
    var changed = false;
    function wrap(it) {
      var room = width - it.e.x.value - (it.m.dx || 0);
      var most = it.measured;
      if (typeof it.text === "string" && it.text.length && typeof it.e.text.field === "string") {
        var n = Math.max.apply(null, it.text.split("\n").map(function (s) { return s.length; }));
        most = Math.max(most, it.measured / n * longestLiteral(it.l, it.e.text.field));
      }
      if (most <= room || room < 40) return;
      if (it.m.lineBreak !== undefined && it.m.lineBreak !== "\n") return;  // its own line breaks: kept as they are
      var chars, text = it.text;
      if (typeof text === "string" && text.length) {
        // the drawn text: its font's width of a character, and the lines it breaks into
        var longest = Math.max.apply(null, text.split("\n").map(function (s) { return s.length; }));
        var perChar = it.measured / longest;
        chars = Math.max(10, Math.floor(room / (1.05 * perChar)));
        it.lines = breakLines(text, chars).length;
        // a text that changes with the params (a field) gets room for a longer one: its drawn
        // length plus 15%, or the longest literal its expression can choose
        if (typeof it.e.text.field === "string") {
          var most = Math.max(longest * 1.15, longestLiteral(it.l, it.e.text.field));
          it.lines = Math.max(it.lines, Math.ceil(most * 1.1 / chars));
        }
      } else {
        chars = Math.max(10, Math.floor(room / ((it.m.fontWeight === "bold" ? 0.68 : 0.62) * it.fs)));
        it.lines = it.own * Math.ceil(it.measured * 1.1 / room);
      }
      var wrapped = "trim(replace(" + (typeof it.e.text.value === "string" ? JSON.stringify(it.e.text.value)
        : "datum[" + JSON.stringify(it.e.text.field) + "]") + ", regexp('(.{1," + chars + "})( +|$|\\n)', 'g'), '$1\\n'))";
      var as = "grpo_wrap_" + it.i;
      it.l.transform = (it.l.transform || []).concat([{calculate: wrapped, as: as}]);
      it.e.text = {field: as, type: "nominal"};
      it.m.lineBreak = "\n"; it.m.lineHeight = it.lh; it.m.limit = 0;
      changed = true;
    }
    left.forEach(wrap);
    // A right-aligned text: beside its row's left-aligned text when both fit, else a row of its own.
    items.forEach(function (it) {
      if ((it.m.align || "center") !== "right") return;
      var partner = left.filter(function (o) { return Math.abs(o.p - it.p) < 2 && o.baseline === it.baseline; })[0];
      if (partner && partner.lines === 1 && partner.e.x.value + (partner.m.dx || 0) + partner.measured + 8 +
          it.measured <= width) { it.follow = partner; return; }
      it.m.align = "left"; it.m.dx = dx; it.e.x.value = x0; changed = true;
      wrap(it);
    });
    // Move the texts of each stack apart: "bottom" (growing up) from the lowest, "top" from the highest.
    function place(group, up) {
      group.sort(function (a, b) { return up ? b.p - a.p : a.p - b.p; });
      var edge = null;
      group.forEach(function (it) {
        var height = (it.lines - 1) * it.lh + it.fs;
        var p = it.p;
        if (edge !== null) p = up ? Math.min(p, edge - 3) : Math.max(p, edge + 3);
        // Vega draws the lines of a text down from its first line: a stack growing up puts its
        // first line higher by the added lines, so that its last line sits where the text was.
        var anchor = up ? p - (it.lines - 1) * it.lh : p;
        if (anchor !== it.p) { it.e.y.value = anchor - (it.m.dy || 0); changed = true; }
        it.at = anchor;
        edge = up ? p - height : p + height;
      });
    }
    var ofLeft = items.filter(function (it) { return it.m.align === "left"; });
    place(ofLeft.filter(function (it) { return it.baseline === "bottom" || it.baseline === "alphabetic"; }), true);
    place(ofLeft.filter(function (it) { return it.baseline === "top"; }), false);
    items.forEach(function (it) {
      if (it.follow && it.follow.at !== undefined && it.follow.at !== it.p) {
        it.e.y.value = it.follow.at - (it.m.dy || 0); changed = true;
      }
    });
    return changed;
  }

  /* Natural (unscaled) width in px of the chart drawn in `el`. */
  function naturalWidth(el) {
    var svg = el.querySelector("svg.marks, svg");
    if (svg) {
      var vb = svg.viewBox && svg.viewBox.baseVal;
      return vb && vb.width ? vb.width : parseFloat(svg.getAttribute("width"));
    }
    var canvas = el.querySelector("canvas");
    return canvas ? parseFloat(canvas.style.width) || canvas.width : 0;
  }

  /* Width in px available to the chart: the container's content width. */
  function available(el) {
    var r = el.getBoundingClientRect().width;
    if (!r) return 0;
    var cs = getComputedStyle(el);
    return r - (parseFloat(cs.paddingLeft) || 0) - (parseFloat(cs.paddingRight) || 0);
  }

  /* The values a reader set on the bound params, carried into a new layout. */
  function carryParams(spec, view) {
    if (!view || !Array.isArray(spec.params)) return;
    spec.params.forEach(function (p) {
      if (p && p.bind !== undefined && p.name) {
        try { p.value = view.signal(p.name); } catch (e) { /* not a signal of this view */ }
      }
    });
  }

  function draw(el, spec, opt, embed, state) {
    if (state.result && state.result.finalize) state.result.finalize();
    el.innerHTML = "";
    return embed(el, spec, opt).then(function (result) {
      state.result = result;
      el.grpoView = result.view;
      el.grpoSpec = spec;
      return result;
    });
  }

  /* Lay the chart out for its container; resolves to the last vega-embed result. */
  function layout(el, state) {
    var avail = available(el);
    if (!avail) return Promise.resolve(state.result);  // hidden: laid out when shown
    if (avail >= state.fullWidth - 0.5) {
      if (state.layout === "natural") return Promise.resolve(state.result);
      var full = clone(state.spec);
      carryParams(full, state.result && state.result.view);
      return draw(el, full, state.opt, state.embed, state).then(function (r) {
        return finish(el, state, "natural", r);
      });
    }
    if (state.layout !== "natural" && state.layoutWidth === avail) return Promise.resolve(state.result);
    var spec = clone(state.spec);
    carryParams(spec, state.result && state.result.view);
    var changes = stack(spec, avail);
    var kind = changes.length ? "stacked" : "natural";
    var start = changes.length || state.layout !== "natural"
      ? draw(el, spec, state.opt, state.embed, state) : Promise.resolve(state.result);
    var tries = 0, before = null;
    function shrink(result) {
      var w = naturalWidth(el);
      if (w <= avail + 0.5) return finish(el, state, kind, result, avail);
      if (before !== null && before.width - w < 0.5 * (before.width - avail) && !before.capped) {
        // Narrower panels did not make the chart much narrower: something of fixed size (a long
        // annotation) sets its width. Keep panels of a reasonable width for the column instead.
        // The axes' room is what the natural layout drew beside its widest panel (at most 80 px: a
        // legend moved under the plot no longer takes room beside it).
        var axes = Math.min(80, Math.max(30, state.fullWidth - widestPanel(state.spec)));
        spec = before.spec; narrow(spec, 0);
        var panel = Math.max(MIN_WIDTH, Math.floor(avail - axes));
        // each panel as wide as that room allows, up to its own width (the narrowing before may
        // have taken more off it than the fixed-size parts, laid out below, leave necessary)
        var stacked = clone(state.spec); stack(stacked, avail);
        fitWidths(spec, stacked, panel);
        var room = Math.min(panel, widestPanel(spec) || panel);
        annotations(spec, room, state.textWidths || {});
        if (legendsOverflow(result && result.view, avail)) legends(spec, room);
        before = {spec: null, width: w, capped: true};
        return draw(el, spec, state.opt, state.embed, state).then(function (r) {
          return finish(el, state, kind, r, avail);
        });
      }
      if (tries >= 2) return finish(el, state, kind, result, avail);
      var previous = clone(spec);
      if (!narrow(spec, w - avail)) return finish(el, state, kind, result, avail);
      before = {spec: previous, width: w, capped: false};
      tries++;
      kind = "narrowed";
      return draw(el, spec, state.opt, state.embed, state).then(shrink);
    }
    return start.then(shrink);
  }

  function finish(el, state, kind, result, avail) {
    state.layout = kind;
    state.layoutWidth = avail || 0;
    el.dataset.grpoLayout = kind;
    el.dataset.grpoNatural = String(Math.round(naturalWidth(el)));
    return result;
  }

  /* Embed `spec` in `el` like vegaEmbed(el, spec, opt), laid out for el's width. `embed` is
     the vegaEmbed function (from RequireJS on pages with widgets); default window.vegaEmbed. */
  function grpoEmbed(el, spec, opt, embed) {
    embed = embed || root.vegaEmbed;
    var base = clone(spec);
    if (root.grpoChartsOff) {  // drawn as given (a measurement of the page without this file)
      return draw(el, base, opt || {}, embed, {});
    }
    floorFonts(base);
    var state = {spec: base, opt: opt || {}, embed: embed, result: null, layout: "natural", layoutWidth: 0,
                 fullWidth: 0};
    var first = draw(el, clone(base), state.opt, embed, state).then(function (r) {
      finish(el, state, "natural", r);
      state.fullWidth = naturalWidth(el);
      state.textWidths = textWidths(r && r.view);
      return layout(el, state);
    });
    if (typeof ResizeObserver === "function") {
      var busy = first, lastWidth = null;
      first.then(function () {
        lastWidth = available(el);
        new ResizeObserver(function () {
          var w = available(el);
          if (!w || Math.abs(w - lastWidth) < 1) return;
          lastWidth = w;
          busy = busy.then(function () { return layout(el, state); }, function () {});
        }).observe(el);
      }, function () {});
    }
    return first;
  }

  var api = {grpoEmbed: grpoEmbed, floorFonts: floorFonts, stack: stack, narrow: narrow,
             capWidths: capWidths, fitWidths: fitWidths, annotations: annotations, legends: legends, wrapText: wrapText, wrapExpr: wrapExpr, MIN_FONT: MIN_FONT, MIN_WIDTH: MIN_WIDTH};
  if (typeof module === "object" && module.exports) module.exports = api;
  else { root.grpoEmbed = grpoEmbed; root.grpoCharts = api; }
})(typeof window !== "undefined" ? window : this);
