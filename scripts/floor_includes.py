#!/usr/bin/env python3
"""Counts the #include lines between the project's folders (docs/ARCHITECTURE.md, "Floors"): row
includes column. The build enforces the floors (cmake/floors.cmake); this prints the figures."""
import pathlib
import re
import sys

FOLDERS = ["core", "generator", "cache", "templates", "tuner", "api", "tools", "bench"]
TARGETS = ["include/tuned"] + FOLDERS
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
counts = {(a, b): 0 for a in FOLDERS for b in TARGETS}
for folder in FOLDERS:
    for path in (root / folder).rglob("*"):
        if path.suffix not in {".cpp", ".hpp", ".h", ".cu", ".cuh", ".in"}:
            continue
        for line in path.read_text(errors="replace").splitlines():
            m = include.match(line)
            if not m:
                continue
            to = "include/tuned" if m.group(1) == "tuned" else m.group(1)
            if to != folder and (folder, to) in counts:
                counts[(folder, to)] += 1
print("| from \\ to | " + " | ".join(TARGETS) + " |")
print("|---|" + "--:|" * len(TARGETS))
for a in FOLDERS:
    cells = ["-" if a == b else (str(counts[(a, b)]) if counts[(a, b)] else "") for b in TARGETS]
    print(f"| {a} | " + " | ".join(cells) + " |")
