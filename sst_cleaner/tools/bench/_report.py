"""The benchmark's output: the text table, Markdown and JSON renderings, and the
prediction files.

``FIT_500`` and the clock are read from the package at call time, not copied at import:
``main`` picks the clock from ``--wall-clock`` after this module is loaded.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import TYPE_CHECKING

from sst_cleaner.tools import bench as _bench

if TYPE_CHECKING:
    from sst_cleaner.tools.bench import Run

# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------

_HEADER = ("corpus", "method", "mode", "pages", "err", "P", "R", "F1", "siteF1", "fit ms/page", "clean ms", "parse ms")


def _row_cells(run: Run, floor: dict[str, float]) -> list[str]:
    s = run.score
    parse = [floor[p.id] for p in run.scored if p.id in floor]

    def ms(v):
        if v is None:
            return "-"
        return f"{v:.0f}" if v >= 100 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"

    if not s or not s.pages:
        nums = ["-"] * 4
    else:
        nums = [f"{s.precision:.4f}", f"{s.recall:.4f}", f"{s.f1:.4f}", f"{s.site_f1:.4f}"]
    return [
        run.corpus,
        run.method,
        run.mode,
        str(s.pages if s else 0),
        str(run.errors),
        *nums,
        ms(run.fit_ms_per_page),
        ms(run.clean_ms_median),
        ms(statistics.median(parse) if parse else None),
    ]


def _fmt_fit500(name: str, method: str, info: dict) -> str:
    if info.get("ms") is None:
        return f"{name} {method}: fit {_bench.FIT_500} pages: n/a"
    if info["estimate"]:
        return (
            f"{name} {method}: fit {_bench.FIT_500} pages ~ {info['ms'] / 1000:.2f} s  ESTIMATE "
            f"(fit ms/page of {info['from_mode']} x {_bench.FIT_500}; largest site has "
            f"{info['largest_site_pages']} pages)"
        )
    runs = ", ".join(f"{ms / 1000:.2f}" for ms in info.get("runs_ms", []))
    where = f"{info['sites']} sites' first pages fitted as one model" if info.get("mixed") else f"site {info['site']}"
    floor = ""
    if info.get("x_floor"):
        floor = f"; {info['x_floor']:.1f}x lxml parsing the same pages ({info['floor_ms'] / 1000:.2f} s in this run)"
    par = info.get("parallel")
    if par:
        pruns = ", ".join(f"{ms / 1000:.2f}" for ms in par["runs_wall_ms"])
        floor += (
            f"; on {par['processes']} processes (n_jobs): {par['wall_ms'] / 1000:.2f} s wall-clock "
            f"(median of {pruns} s; {par['cpu_ms'] / 1000:.2f} s CPU in all)"
        )
    return (
        f"{name} {method}: fit {_bench.FIT_500} pages = {info['ms'] / 1000:.2f} s  measured on {where} "
        f"(median of {runs} s){floor}"
    )


def render_text(results: list[dict]) -> str:
    rows = [list(_HEADER)]
    for res in results:
        for run in res["runs"]:
            rows.append(_row_cells(run, res["floor"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    left = {0, 1, 2}
    lines = ["  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = ["\n".join(lines), ""]
    for res in results:
        for method, info in res["fit500"].items():
            out.append(_fmt_fit500(res["corpus"].name, method, info))
    for res in results:
        if res.get("curve") is not None:
            out.append("")
            out.append(_curve_text(res))
    notes = _notes(results)
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out).rstrip() + "\n"


def _curve_text(res: dict) -> str:
    curve = res["curve"]
    name = res["corpus"].name
    if not curve or not curve[0]["run"].scored:
        return f"learning curve {name}: no site with more than 8 pages"
    head = curve[0]["run"]
    lines = [
        f"learning curve {name} {head.method}: F1 vs pages fitted per site "
        f"({head.score.sites} sites with > 8 pages, {head.score.pages} held-out pages)"
    ]
    for pt in curve:
        s = pt["run"].score
        lines.append(
            f"  k={str(pt['k']):<4} P={s.precision:.4f} R={s.recall:.4f} F1={s.f1:.4f} errors={pt['run'].errors}"
        )
    return "\n".join(lines)


def _notes(results: list[dict]) -> list[str]:
    notes = []
    if any(res["corpus"].capped for res in results):
        notes.append(
            "capped: sites larger than --max-pages-per-site were sampled (seed 0); "
            "rescore --out files with score.py --skip-missing"
        )
    clock = "wall-clock" if _bench._clock is time.perf_counter else "CPU"
    notes.append(
        f"times are {clock} ms; fit ms/page = total fit time / pages fitted; clean ms, "
        "parse ms = medians per page (parse ms = lxml alone, the floor); "
        "F1 = macro over pages"
    )
    if _bench._cjk:
        notes.append("tokens: every Han, kana or Hangul character one token (--cjk), other text \\w+ words")
    return notes


def render_markdown(results: list[dict]) -> str:
    out = ["| " + " | ".join(_HEADER) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * (len(_HEADER) - 3)) + "|"]
    for res in results:
        for run in res["runs"]:
            out.append("| " + " | ".join(_row_cells(run, res["floor"])) + " |")
    out.append("")
    for res in results:
        for method, info in res["fit500"].items():
            out.append(f"* {_fmt_fit500(res['corpus'].name, method, info)}")
    for res in results:
        curve = res.get("curve")
        if curve is None:
            continue
        out.append("")
        if not curve[0]["run"].scored:
            out.append(f"Learning curve, {res['corpus'].name}: no site with more than 8 pages.")
            continue
        head = curve[0]["run"]
        out.append(
            f"Learning curve, {res['corpus'].name}, `{head.method}` "
            f"({head.score.sites} sites with > 8 pages, {head.score.pages} held-out pages):"
        )
        out.append("")
        out.append("| pages fitted | P | R | F1 |")
        out.append("|---|---:|---:|---:|")
        for pt in curve:
            s = pt["run"].score
            out.append(f"| {pt['k']} | {s.precision:.4f} | {s.recall:.4f} | {s.f1:.4f} |")
    notes = _notes(results)
    out.append("")
    out.extend(f"_{n}_" for n in notes)
    return "\n".join(out) + "\n"


def _run_json(run: Run, floor: dict[str, float]) -> dict:
    s = run.score
    parse = [floor[p.id] for p in run.scored if p.id in floor]
    return {
        "method": run.method,
        "mode": run.mode,
        "pages": s.pages if s else 0,
        "errors": run.errors,
        "precision": s.precision if s else None,
        "recall": s.recall if s else None,
        "f1": s.f1 if s else None,
        "site_f1": s.site_f1 if s else None,
        "sites": s.sites if s else 0,
        "fit_ms_per_page": run.fit_ms_per_page,
        "fit_calls": run.fit_calls,
        "pages_fitted": run.fit_pages,
        "clean_ms_median": run.clean_ms_median,
        "parse_ms_median": statistics.median(parse) if parse else None,
    }


def render_json(results: list[dict]) -> str:
    out = {}
    for res in results:
        c = res["corpus"]
        entry = {
            "manifest": c.manifest,
            "pages": len(c.pages),
            "sites": len(c.sites),
            "capped": c.capped,
            "runs": [_run_json(r, res["floor"]) for r in res["runs"]],
            "fit500": res["fit500"],
        }
        if res.get("curve") is not None:
            entry["curve"] = [{"k": pt["k"], **_run_json(pt["run"], res["floor"])} for pt in res["curve"]]
        entry["tokens"] = "cjk" if _bench._cjk else "words"
        out[c.name] = entry
    return json.dumps(out, indent=1) + "\n"


def write_predictions(out_dir: str, run: Run) -> str:
    """``OUT/CORPUS__METHOD__MODE.jsonl``: one ``{"id", "text"}`` per scored page."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{run.corpus}__{run.method}__{run.mode}.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for page in run.scored:
            f.write(json.dumps({"id": page.id, "text": run.predictions[page.id]}, ensure_ascii=False) + "\n")
    return path
