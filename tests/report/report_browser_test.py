#!/usr/bin/env python3
"""The tuning report in a real browser (issue 70), with no GPU: a database tuned on recorded
spaces (autotune --replay: GEMM in four layouts, a transpose, an entropy), its page written by
`tunedb report`, then opened in headless Chromium:
  - the page logs nothing to the console (no script error, no failed load: it fetches nothing);
  - its DOM, after the page's script ran, holds the four views (the sortable table of every
    tuned problem, a roofline, the family map, the tuning curves) and the provenance;
  - a screenshot is saved as BUILD_DIR/report_screenshot.png (what the README shows).
`autotune --report` of the same kind of run is checked to write the same views.

  report_browser_test.py BUILD_DIR SOURCE_DIR
Needs Debian's chromium; without it the test skips (exit 77) unless TUNED_REQUIRE_BROWSER=1,
which makes that a failure.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHAPES = """gemm NN 1536x768x3584
gemm NT 1536x1536x2560
gemm TN 1000x600x1200
gemm TT 777x1000x555
gemm TN 4096x2048x12288
gemm NN 1536x8192x2560
transpose T 4096x4096
entropy F32 2560x2560x2x16
"""


def say(*args):
    print("report:", *args, flush=True)


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def headless(chromium, *args):
    """Chromium's output and its log (console messages appear there as CONSOLE lines)."""
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--enable-logging=stderr", "--v=0", *args],
                         capture_output=True, text=True, timeout=120)
    return run.stdout, run.stderr


def check_page(chromium, page, screenshot):
    """Problems of the page in the browser (an empty list: none)."""
    problems = []
    dom, log = headless(chromium, "--dump-dom", "file://" + page)
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    if console:
        problems.append("the console says: " + " | ".join(console))
    if "</html>" not in dom:
        problems.append("no page came back from the browser: " + log[-500:])
    for view in ("Roofline: ops counting flops", "Roofline: ops counting bytes",
                 "Which family wins where: gemm", "Tuning curves", "Provenance"):
        if view not in dom:
            problems.append(f"no '{view}' view")
    # two rooflines (flops, bytes), the family map and the curves against trials (the run is too
    # short for a curve against seconds)
    if dom.count("<svg") < 4:
        problems.append(f"{dom.count('<svg')} charts, not the 4 of the views")
    table = re.search(r'<table class="sortable bests">(.*?)</table>', dom, re.S)
    rows = re.findall(r"<tr><td>", table.group(1)) if table else []
    if len(rows) != 8:
        problems.append(f"the table lists {len(rows)} tuned problems, not 8")
    _, log = headless(chromium, "--hide-scrollbars", "--window-size=1500,1400",
                      "--screenshot=" + screenshot, "file://" + page)
    if not os.path.exists(screenshot) or os.path.getsize(screenshot) < 10000:
        problems.append("no screenshot: " + log[-300:])
    return problems


def main():
    build, source = sys.argv[1], sys.argv[2]
    chromium = browser()
    if chromium is None:
        say("no chromium here (Debian's chromium package)")
        return 1 if os.environ.get("TUNED_REQUIRE_BROWSER") == "1" else 77
    autotune = os.path.join(build, "tools", "autotune")
    tunedb = os.path.join(build, "tools", "tunedb")
    with tempfile.TemporaryDirectory() as folder:
        shapes = os.path.join(folder, "shapes.txt")
        with open(shapes, "w") as f:
            f.write(SHAPES)
        db = os.path.join(folder, "fixture.db")
        run_page = os.path.join(folder, "run.html")
        subprocess.run([autotune, "--replay", os.path.join(source, "bench", "replay"),
                        "--shapes-from", shapes, "--budget", "24", "--seed", "7", "--db", db,
                        "--report", run_page],
                       check=True, stdout=subprocess.DEVNULL, timeout=600)
        page = os.path.join(build, "report.html")
        said = subprocess.run([tunedb, "--db", db, "report", "--out", page], check=True,
                              capture_output=True, text=True).stdout.strip()
        say(said)
        problems = check_page(chromium, page, os.path.join(build, "report_screenshot.png"))
        # autotune --report: the run's own page, with the same views.
        problems += ["autotune --report: " + p for p in
                     check_page(chromium, run_page, os.path.join(folder, "run.png"))]
    for p in problems:
        say("FAILED:", p)
    if not problems:
        say("the page has no console message, holds the four views and the provenance; "
            "screenshot in", os.path.join(build, "report_screenshot.png"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
