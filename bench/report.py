#!/usr/bin/env python3
"""OAR's benchmark results: one JSON, one self-contained HTML page, and the
tables of docs/performance.md, all from the same run (issue 18).

  report.py merge OUT.json LABEL=FILE.json... [--context KEY=VALUE...]
      Google Benchmark JSON files (and bench/paddle_bench.py's, same format)
      into one: "context" (machine, date, load, git revision: the KEY=VALUE
      pairs) and "benchmarks" (every entry, with "executable" = LABEL).
  report.py html RESULTS.json OUT.html [--targets bench/targets.json]
      A page with a chart per group of bench/targets.json: OAR against its
      baseline, the ratio against its target, pass or fail. No network: the
      charts are inline SVG, the one script is inline.
  report.py docs RESULTS.json DOC.md [--targets bench/targets.json]
      Rewrites each section of DOC.md between `<!-- bench:begin GROUP -->`
      and `<!-- bench:end -->` with GROUP's table; a group without results
      in RESULTS.json keeps its section as it was.

Python 3 standard library only.
"""
import argparse
import html
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TARGETS = os.path.join(HERE, "targets.json")
NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# ------------------------------------------------------------------ merge

def merge(out, inputs, context):
    merged = {"context": dict(context), "runs": [], "benchmarks": []}
    for item in inputs:
        label, _, path = item.partition("=")
        with open(path) as f:
            data = json.load(f)
        context = dict(data.get("context", {}))
        # scripts/bench.sh notes the git revision and a shortened
        # --benchmark_min_time beside each program's file.
        for key in ("revision", "min_time"):
            note = os.path.splitext(path)[0] + "." + key
            if os.path.exists(note):
                context[key] = open(note).read().strip()
        merged["runs"].append({"executable": label, "context": context})
        for b in data.get("benchmarks", []):
            b = dict(b)
            b["executable"] = label
            merged["benchmarks"].append(b)
    with open(out, "w") as f:
        json.dump(merged, f, indent=1)


# ------------------------------------------------------------ evaluation

def index(results):
    """run name -> entry, the median aggregate where there are repetitions."""
    found = {}
    for b in results.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        # "executable:name" always; the bare name too (first program wins).
        for key in (f"{b.get('executable', '')}:{name}", name):
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    found[key] = b
            elif key not in found:
                found[key] = b
    return found


def value(entry, metric, unit, scale=1.0):
    """|metric| of |entry|: a time converted to |unit|, or a counter times
    |scale| (e.g. 1e-9 for bytes_per_second in GB/s)."""
    if entry is None:
        return None
    if metric in ("real_time", "cpu_time"):
        t = entry.get(metric)
        if t is None:
            return None
        return t * NS_PER[entry.get("time_unit", "ns")] / NS_PER.get(unit, 1.0)
    v = entry.get(metric)
    return float(v) * scale if isinstance(v, (int, float)) else None


def evaluate(pair, found):
    """The pair's measured figures and verdict (pass / fail / missing)."""
    metric = pair.get("metric", "real_time")
    unit = pair.get("unit", "ns")
    scale = pair.get("scale", 1.0)
    oar = value(found.get(pair["oar"]), metric, unit, scale)
    base = None
    if pair.get("baseline"):
        base = value(found.get(pair["baseline"]), pair.get("baseline_metric", metric), unit, scale)
    kind = pair.get("kind", "ratio")
    measured = None
    if oar is not None:
        if kind == "value":
            measured = oar
        elif base is not None and kind == "difference":
            measured = oar - base
        elif base:
            measured = oar / base
    status = "missing"
    if measured is not None:
        higher = pair.get("better", "lower") == "higher"
        ok = measured >= pair["limit"] if higher else measured <= pair["limit"]
        status = "pass" if ok else "fail"
    executable = (found.get(pair["oar"]) or {}).get("executable")
    return {"oar": oar, "baseline": base, "measured": measured, "status": status,
            "executable": executable}


def target_text(pair):
    sign = "≥" if pair.get("better", "lower") == "higher" else "≤"
    kind = pair.get("kind", "ratio")
    if kind == "ratio":
        return f"{sign} {pair['limit']:g}×"
    return f"{sign} {pair['limit']:g} {pair.get('unit', '')}".rstrip()


def measured_text(pair, r):
    if r["measured"] is None:
        return "—"
    if pair.get("kind", "ratio") == "ratio":
        return f"{r['measured']:.2f}×"
    return f"{fmt(r['measured'])} {pair.get('unit', '')}".rstrip()


def with_unit(v, unit):
    return "—" if v is None else f"{fmt(v)} {unit}".rstrip()


def fmt(v):
    if v is None:
        return "—"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def load_targets(path):
    with open(path) as f:
        return json.load(f)["groups"]


def context_line(ctx):
    parts = [ctx.get("date", "?")]
    if ctx.get("cpu"):
        parts.append(f"{ctx['cpu']}, {ctx.get('num_cpus', '?')} CPUs")
    if ctx.get("load_avg_start"):
        parts.append(f"load average {ctx['load_avg_start']} at the start, "
                     f"{ctx.get('load_avg_end', '?')} at the end")
    if ctx.get("git_revision"):
        parts.append(f"git {ctx['git_revision']}")
    return "; ".join(parts)


# ------------------------------------------------------------------ html

COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "missing": "#9e9e9e"}


def svg_chart(group, rows):
    """One chart: per pair, OAR's and the baseline's bars (scaled to the
    larger of the two) and the ratio's bar against the target line."""
    row_h, label_w, bar_w, gap, ratio_w = 46, 330, 280, 30, 260
    width = label_w + bar_w + gap + ratio_w + 20
    height = 30 + row_h * len(rows)
    out = [f'<svg class="chart" data-group="{html.escape(group["id"])}" '
           f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{html.escape(group["title"])}">',
           f'<text x="{label_w}" y="16" class="axis">OAR (colour) and baseline (grey)</text>',
           f'<text x="{label_w + bar_w + gap}" y="16" class="axis">measured against the target '
           f'(dashed)</text>']
    for i, (pair, r) in enumerate(rows):
        y = 30 + i * row_h
        colour = COLOURS[r["status"]]
        label = pair["name"] if len(pair["name"]) <= 52 else pair["name"][:50] + "…"
        out.append(f'<text x="0" y="{y + 16}" class="label">{html.escape(label)}'
                   f'<title>{html.escape(pair["name"])}</title></text>')
        a, b = r["oar"], r["baseline"]
        top = max([v for v in (a, b) if v is not None] or [1.0]) or 1.0
        unit = pair.get("unit", "")
        for j, (v, fill, who) in enumerate(((a, colour, "OAR"), (b, "#90a4ae", "baseline"))):
            if v is None:
                continue
            w = max(1.0, bar_w * 0.72 * max(v, 0) / top)
            yy = y + 4 + j * 17
            out.append(f'<rect class="bar {who.lower()}" x="{label_w}" y="{yy}" width="{w:.1f}" '
                       f'height="14" fill="{fill}"><title>{who}: {fmt(v)} {unit}</title></rect>')
            out.append(f'<text x="{label_w + w + 4:.1f}" y="{yy + 11}" class="value">'
                       f'{fmt(v)} {html.escape(unit)}</text>')
        x0 = label_w + bar_w + gap
        m, limit = r["measured"], pair["limit"]
        scale_top = max(limit * 2, (m or 0) * 1.1) or 1.0
        if m is not None:
            w = max(1.0, (ratio_w - 60) * max(m, 0) / scale_top)
            out.append(f'<rect class="ratio {r["status"]}" x="{x0}" y="{y + 8}" width="{w:.1f}" '
                       f'height="22" fill="{colour}"><title>{measured_text(pair, r)} '
                       f'(target {target_text(pair)})</title></rect>')
        lx = x0 + (ratio_w - 60) * limit / scale_top
        out.append(f'<line class="target" x1="{lx:.1f}" y1="{y + 2}" x2="{lx:.1f}" y2="{y + 36}" '
                   f'stroke="#000" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x0 + ratio_w - 55}" y="{y + 24}" class="value">'
                   f'{html.escape(measured_text(pair, r))}</text>')
    out.append("</svg>")
    return "\n".join(out)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>OAR benchmarks {date}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #212121; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
tr.pass td.verdict {{ background: #c8e6c9; }}
tr.fail td.verdict {{ background: #ffcdd2; }}
tr.missing td.verdict {{ background: #eeeeee; }}
svg .label {{ font-size: 12px; }} svg .value, svg .axis {{ font-size: 11px; fill: #555; }}
.context {{ color: #555; }}
</style></head><body>
<h1>OAR benchmarks</h1>
<p class="context" id="context">{context}</p>
<p id="summary">(summary: needs the page's script)</p>
{sections}
<script>
// Counts the verdicts of every table row: the summary line at the top.
(function () {{
  var rows = document.querySelectorAll("tr.pair");
  var n = {{pass: 0, fail: 0, missing: 0}};
  rows.forEach(function (r) {{ n[r.dataset.status] += 1; }});
  document.getElementById("summary").textContent =
      n.pass + " of " + (n.pass + n.fail) + " measured targets met, " + n.fail +
      " missed, " + n.missing + " not measured in this run; " +
      document.querySelectorAll("svg.chart").length + " charts.";
}})();
</script>
</body></html>
"""


def write_html(results, targets, out):
    found = index(results)
    ctx = results.get("context", {})
    sections = []
    for group in targets:
        rows = [(p, evaluate(p, found)) for p in group["pairs"]]
        measured = [(p, r) for p, r in rows if r["status"] != "missing"]
        s = [f'<section id="{html.escape(group["id"])}"><h2>{html.escape(group["title"])}</h2>']
        if group.get("note"):
            s.append(f"<p>{html.escape(group['note'])}</p>")
        if measured:
            programs = programs_line(results, {r["executable"] for _, r in measured})
            s.append(f'<p class="context">{html.escape(programs)}</p>')
        if measured:
            s.append(svg_chart(group, measured))
        else:
            s.append("<p>Not measured in this run.</p>")
        s.append("<table><tr><th>what</th><th>OAR</th><th>baseline</th><th>measured</th>"
                 "<th>target</th><th>verdict</th></tr>")
        for p, r in rows:
            unit = p.get("unit", "")
            s.append(f'<tr class="pair {r["status"]}" data-status="{r["status"]}">'
                     f'<td>{html.escape(p["name"])}</td>'
                     f'<td>{html.escape(with_unit(r["oar"], unit))}</td>'
                     f'<td>{html.escape(with_unit(r["baseline"], unit))}</td>'
                     f'<td>{html.escape(measured_text(p, r))}</td>'
                     f'<td>{html.escape(target_text(p))}</td>'
                     f'<td class="verdict">{r["status"]}</td></tr>')
        s.append("</table></section>")
        sections.append("\n".join(s))
    with open(out, "w") as f:
        f.write(PAGE.format(date=html.escape(ctx.get("date", "")),
                            context=html.escape(context_line(ctx)),
                            sections="\n".join(sections)))


# ------------------------------------------------------------------ docs

BEGIN = re.compile(r"^<!-- bench:begin (\S+) -->\s*$")
END = re.compile(r"^<!-- bench:end -->\s*$")


def markdown_table(group, results):
    found = index(results)
    rows = [(p, evaluate(p, found)) for p in group["pairs"]]
    if all(r["status"] == "missing" for _, r in rows):
        return None
    lines = ["| what | OAR | baseline | measured | target | met |", "|---|---|---|---|---|---|"]
    for p, r in rows:
        unit = p.get("unit", "")
        base, oar = with_unit(r["baseline"], unit), with_unit(r["oar"], unit)
        met = {"pass": "yes", "fail": "**no**", "missing": "not run"}[r["status"]]
        lines.append(f"| {p['name']} | {oar} | {base} | **{measured_text(p, r)}** | "
                     f"{target_text(p)} | {met} |")
    lines.append("")
    lines.append(f"Generated by `bench/report.py docs` from `scripts/bench.sh`: "
                 f"{programs_line(results, {r['executable'] for _, r in rows})}.")
    return lines


def programs_line(results, executables):
    """When each program of |executables| ran and at what load average."""
    runs = {r["executable"]: r.get("context", {}) for r in results.get("runs", [])}
    parts = []
    for exe in sorted(e for e in executables if e):
        ctx = runs.get(exe, {})
        load = ctx.get("load_avg")
        load = " ".join(f"{v:.1f}" for v in load) if isinstance(load, list) else "?"
        note = f", --min-time {ctx['min_time']} s" if ctx.get("min_time") else ""
        revision = f" at git {ctx['revision']}" if ctx.get("revision") else ""
        parts.append(f"`{exe}`{revision} {ctx.get('date', '?')}, load average {load}{note}")
    return "; ".join(parts)


def rewrite_docs(results, targets, doc):
    groups = {g["id"]: g for g in targets}
    with open(doc) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            j += 1
        if j == len(lines):
            sys.exit(f"report.py: {doc}:{i + 1}: bench:begin {m.group(1)} without bench:end")
        if m.group(1) not in groups:
            sys.exit(f"report.py: {doc}:{i + 1}: no group {m.group(1)} in the targets")
        table = markdown_table(groups[m.group(1)], results)
        out.append(lines[i])
        if table is None:
            print(f"report.py: {m.group(1)}: not in these results, section kept")
            out.extend(lines[i + 1:j])
        else:
            print(f"report.py: {m.group(1)}: section rewritten")
            out.extend(table)
        out.append(lines[j])
        i = j + 1
    with open(doc, "w") as f:
        f.write("\n".join(out))


def main():
    parser = argparse.ArgumentParser(description="OAR benchmark results: JSON, HTML, docs")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+", help="LABEL=FILE.json")
    m.add_argument("--context", nargs="*", default=[], help="KEY=VALUE")
    for name in ("html", "docs"):
        p = sub.add_parser(name)
        p.add_argument("results")
        p.add_argument("out")
        p.add_argument("--targets", default=DEFAULT_TARGETS)
    args = parser.parse_args()
    if args.command == "merge":
        merge(args.out, args.inputs, [kv.split("=", 1) for kv in args.context])
        return
    with open(args.results) as f:
        results = json.load(f)
    targets = load_targets(args.targets)
    if args.command == "html":
        write_html(results, targets, args.out)
    else:
        rewrite_docs(results, targets, args.out)


if __name__ == "__main__":
    main()
