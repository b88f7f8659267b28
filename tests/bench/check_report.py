#!/usr/bin/env python3
"""ctest bench_report_renders_in_browser: scripts/bench.sh --quick writes
results.json and report.html; a real headless browser (chromium) opens the
page, and the test checks what it shows:

- the DOM after the page's script ran: the summary line the script writes,
  one <svg class="chart"> per group with results, one row per target pair
  of bench/targets.json, and every pair measured in the run with a verdict;
- a screenshot: not blank, and the pass/fail colours of the charts' bars are
  on it (so the inline SVG was drawn, not only parsed);
- the same checks reject a page whose charts and script were taken out
  (the checks can fail);
- bench/report.py docs rewrites a copy of docs/performance.md's marked
  sections from the run and leaves everything outside them alone.

    check_report.py --source DIR --build DIR --browser PATH --work DIR
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

PASS_RGB, FAIL_RGB = (0x2E, 0x7D, 0x32), (0xC6, 0x28, 0x28)


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def browser(args, *flags):
    profile = os.path.join(args.work, "browser-profile")
    cmd = [args.browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}", *flags]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          timeout=60, text=True).stdout


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def check_page(args, page, expected_rows, expected_charts, measured):
    """Problems found with |page| in the browser (empty: none)."""
    problems = []
    dom = browser(args, "--dump-dom", "file://" + page)
    summary = re.search(r'<p id="summary">([^<]*)</p>', dom)
    if not summary or "measured targets met" not in summary.group(1):
        text = summary and summary.group(1)
        problems.append(f"the page's script did not write the summary: {text}")
    elif f"{expected_charts} charts" not in summary.group(1):
        problems.append(f"summary {summary.group(1)!r}: expected {expected_charts} charts")
    charts = len(re.findall(r'<svg class="chart"', dom))
    if charts != expected_charts:
        problems.append(f"{charts} charts in the DOM, expected {expected_charts}")
    rows = re.findall(r'<tr class="pair (\w+)" data-status="(\w+)"', dom)
    if len(rows) != expected_rows:
        problems.append(f"{len(rows)} target rows in the DOM, expected {expected_rows}")
    judged = sum(1 for _, status in rows if status in ("pass", "fail"))
    if judged != measured:
        problems.append(f"{judged} rows with a verdict, expected {measured}")
    bars = len(re.findall(r'<rect class="bar oar"', dom))
    if bars < measured:
        problems.append(f"{bars} OAR bars in the charts, expected at least {measured}")

    shot = os.path.join(args.work, "shot.png")
    if os.path.exists(shot):
        os.remove(shot)
    browser(args, f"--screenshot={shot}", "--window-size=1000,900", "file://" + page)
    width, height, bpp, pixels = png_pixels(shot)
    white = coloured = 0
    for line in pixels:
        for i in range(0, len(line), bpp):
            rgb = tuple(line[i:i + 3])
            if rgb == (255, 255, 255):
                white += 1
            elif rgb in (PASS_RGB, FAIL_RGB):
                coloured += 1
    total = width * height
    print(f"screenshot {width}x{height}: {total - white} non-white pixels, "
          f"{coloured} in the pass/fail colours", flush=True)
    if total - white < total // 100:
        problems.append("the screenshot is blank")
    if coloured < 500:
        problems.append(f"only {coloured} pixels of the charts' pass/fail colours on screen")
    return problems


def main():
    parser = argparse.ArgumentParser()
    for name in ("--source", "--build", "--browser", "--work"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    if os.path.isdir(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    out = os.path.join(args.work, "results")

    run([os.path.join(args.source, "scripts", "bench.sh"), "--quick", "--build", args.build,
         "--out", out, "--timeout", "240"])
    results = json.load(open(os.path.join(out, "results.json")))
    for key in ("date", "cpu", "num_cpus", "load_avg_start", "git_revision"):
        assert results["context"].get(key), f"results.json: no {key} in the context"
    assert results["benchmarks"], "results.json: no benchmarks"

    sys.path.insert(0, os.path.join(args.source, "bench"))
    import report
    targets = report.load_targets(os.path.join(args.source, "bench", "targets.json"))
    found = report.index(results)
    pairs = [(g["id"], report.evaluate(p, found)) for g in targets for p in g["pairs"]]
    measured = sum(1 for _, r in pairs if r["status"] != "missing")
    charts = len({g for g, r in pairs if r["status"] != "missing"})
    print(f"{len(pairs)} target pairs, {measured} measured in this run, {charts} groups",
          flush=True)
    assert measured >= 3, "the quick run measured fewer than 3 target pairs"

    problems = check_page(args, os.path.join(out, "report.html"), len(pairs), charts, measured)
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1

    # The checks must be able to fail: the same page without its charts and script.
    broken = os.path.join(args.work, "broken.html")
    page = open(os.path.join(out, "report.html")).read()
    page = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    open(broken, "w").write(page)
    found_broken = check_page(args, broken, len(pairs), charts, measured)
    print("the broken page:", found_broken, flush=True)
    if len(found_broken) < 3:
        print("FAIL: a page without charts or script was not rejected")
        return 1

    # docs: the marked sections of a copy of docs/performance.md.
    doc = os.path.join(args.work, "performance.md")
    shutil.copy(os.path.join(args.source, "docs", "performance.md"), doc)
    run([sys.executable, os.path.join(args.source, "bench", "report.py"), "docs",
         os.path.join(out, "results.json"), doc])
    before = open(os.path.join(args.source, "docs", "performance.md")).read()
    after = open(doc).read()
    outside = re.compile(r"<!-- bench:begin \S+ -->.*?<!-- bench:end -->", re.S)
    if outside.sub("", before) != outside.sub("", after):
        print("FAIL: report.py docs changed text outside the marked sections")
        return 1
    begins = re.findall(r"<!-- bench:begin (\S+) -->", after)
    if not begins:
        print("FAIL: docs/performance.md has no bench:begin sections")
        return 1
    measured_groups = {g for g, r in pairs if r["status"] != "missing"}
    for group in begins:
        section = re.search(rf"<!-- bench:begin {group} -->(.*?)<!-- bench:end -->", after, re.S)
        generated = "Generated by `bench/report.py docs`" in section.group(1)
        if group in measured_groups and not generated:
            print(f"FAIL: section {group} was not rewritten from the run")
            return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
