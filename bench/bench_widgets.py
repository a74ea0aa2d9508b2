"""Widget latencies: the live explorers in Python and the static slider charts in Chromium.

Rows:

* ``oscillator explorer``: wall time of one slider change (``control.value = x`` returns after the
  explorer recomputed with grpo_core and replaced its two charts), per control, median and 90th
  percentile; aim under 30 ms. Next to it, the same update with the charts rebuilt by Altair on
  every change (what the explorer avoids by swapping data into a cached spec,
  :class:`widgets._controls.LiveChart`): the ratio is the speed-up.
* ``bandit explorer``: time from Run to the first chart (first chunk of seeds simulated and drawn),
  in a fresh explorer (first Altair chart of the process) and in a warm one; the whole run too.
* ``static page``: in headless Chromium on the built book's Explorers page, the time from a
  slider's ``input`` event to the redrawn label of the chart (the static phase diagram and the
  oscillator slider chart), median of 20 moves; aim under 100 ms. Skipped when there is no built
  book (``make book``) or no Chromium.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _percentile(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def _oscillator_rows(quick: bool) -> list[dict]:
    from widgets import explorer_charts
    from widgets.oscillator_explorer import compute_oscillator_view, oscillator_explorer

    n = 10 if quick else 40
    ex = oscillator_explorer(eta=0.05, mu=0.5, k_ref=4, group_size=8, steps=200)
    moves = {
        "eta": np.geomspace(0.01, 0.1, n),
        "mu": np.linspace(0.1, 0.8, n),
        "k_ref": np.arange(1, n + 1) % 12 + 1,
        "curvature": np.geomspace(0.3, 2.0, n),
        "beta": np.linspace(0.0, 0.5, n),
        "group_size": np.arange(1, n + 1) * 4,
    }
    rows = []
    all_times = []
    for name, values in moves.items():
        times = []
        for v in values:
            t0 = time.perf_counter()
            ex.controls[name].value = v.item()
            times.append((time.perf_counter() - t0) * 1e3)
        ex.controls[name].value = {"eta": 0.05, "mu": 0.5, "k_ref": 4, "curvature": 1.0, "beta": 0.0,
                                   "group_size": 8}[name]
        all_times += times
        rows.append(
            {
                "bench": "oscillator explorer",
                "case": f"slider {name}",
                "median_ms": statistics.median(times),
                "p90_ms": _percentile(times, 90),
                "aim_ms": 30,
            }
        )
    # The same updates with the Altair charts rebuilt each time.
    rebuild = []
    for v in moves["eta"][: max(5, n // 4)]:
        t0 = time.perf_counter()
        p = ex.parameters()
        p["eta"] = float(v)
        view = compute_oscillator_view(**p)
        explorer_charts.trajectory_view_chart(
            explorer_charts.trajectory_frames(view["bands"], view["closed_form"])
        ).to_dict(validate=False)
        explorer_charts.phase_point_chart(explorer_charts.phase_frames(
            view["a"], p["k_ref"], p["mu"], view["verdict_label"])).to_dict(validate=False)
        rebuild.append((time.perf_counter() - t0) * 1e3)
    compute = []
    for v in moves["eta"]:
        p = ex.parameters()
        p["eta"] = float(v)
        t0 = time.perf_counter()
        compute_oscillator_view(**p)
        compute.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(all_times)
    rows.append({"bench": "oscillator explorer", "case": "all sliders", "median_ms": med,
                 "p90_ms": _percentile(all_times, 90), "aim_ms": 30})
    rows.append(
        {
            "bench": "oscillator explorer",
            "case": "of which grpo_core numbers",
            "median_ms": statistics.median(compute),
            "p90_ms": _percentile(compute, 90),
        }
    )
    rows.append({"bench": "oscillator explorer", "case": "charts rebuilt by Altair each change",
                 "median_ms": statistics.median(rebuild), "p90_ms": _percentile(rebuild, 90),
                 "speedup": statistics.median(rebuild) / med})
    return rows


def _bandit_rows(quick: bool) -> list[dict]:
    from widgets.bandit_explorer import bandit_explorer

    seeds, steps = (32, 200) if quick else (64, 300)
    rows = []
    for case in ("fresh explorer", "warm explorer"):
        ex = bandit_explorer(seeds=seeds, steps=steps, run=False)
        if case == "warm explorer":
            ex.start(block=True)
        ex.start(block=True)
        rows.append(
            {
                "bench": "bandit explorer",
                "case": f"{case}, {seeds} seeds x {steps} steps",
                "first_frame_ms": ex.timings["first_frame"] * 1e3,
                "total_ms": ex.timings["total"] * 1e3,
            }
        )
    return rows


_JS_REDRAW = """async ([i, param, values]) => {
    const el = document.querySelectorAll('.vega-embed')[i];
    const input = el.querySelector(`[name="${param}"]`);
    const snap = () => el.querySelector('svg').innerHTML;
    const times = [];
    for (const v of values) {
        const before = snap();
        const t0 = performance.now();
        input.value = String(v);
        input.dispatchEvent(new Event('input', {bubbles: true}));
        while (snap() === before && performance.now() - t0 < 3000) {
            await new Promise(r => requestAnimationFrame(r));
        }
        if (snap() !== before) times.push(performance.now() - t0);
    }
    return times;
}"""


def _browser_rows(quick: bool) -> list[dict]:
    import functools
    import http.server
    import shutil
    import socketserver
    import threading

    html = Path(os.environ.get("GRPO_BOOK_HTML") or ROOT / "_build" / "html")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not (html / "explorers.html").exists() or chromium is None:
        why = "no built book (make book)" if chromium else "no Chromium (make chromium)"
        return [{"bench": "static page", "case": f"skipped: {why}"}]
    from playwright.sync_api import sync_playwright

    import tests.conftest as conf  # the browser flags the tests use

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    n = 8 if quick else 20
    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=conf.CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/explorers.html", wait_until="networkidle")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.vega-embed')].every(e => e.querySelector('svg, "
                "canvas'))"
            )
            charts = page.evaluate(
                "() => [...document.querySelectorAll('.vega-embed')].map(el => "
                "[...el.querySelectorAll('g.role-mark')].map(g => g.getAttribute('class')).join(' '))")
            cases = [("static phase diagram (eta)", "phase_regime_label", "eta", np.linspace(0.01, 0.3, n)),
                     ("oscillator slider chart (eta)", "regime_label", "eta", np.linspace(0.005, 0.1, n)),
                     ("static bandit chart (K_ref)", "bandit_regime_label", "k_ref", (np.arange(n) % 15) + 1)]
            for name, mark, param, values in cases:
                idx = [i for i, c in enumerate(charts) if f"{mark}_marks" in c.split()]
                if not idx:
                    continue
                vals = [round(float(v), 3) for v in values]
                vals = [v for j, v in enumerate(vals) if j == 0 or v != vals[j - 1]]
                times = page.evaluate(_JS_REDRAW, [idx[0], param, vals])
                if not times:
                    rows.append({"bench": "static page", "case": f"{name}: no redraw seen"})
                    continue
                rows.append({"bench": "static page", "case": name, "median_ms": statistics.median(times),
                             "p90_ms": _percentile(times, 90), "aim_ms": 100,
                             "moves": len(times)})
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return rows


def main(quick: bool) -> list[dict]:
    with contextlib.redirect_stderr(io.StringIO()):
        rows = _oscillator_rows(quick) + _bandit_rows(quick)
    return rows + _browser_rows(quick)


if __name__ == "__main__":
    for row in main(quick=False):
        print(row)
