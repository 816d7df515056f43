"""Tuning from Python: the recorder and the tuner.

    with tuned.recording("shapes.txt"):      # or TUNED_RECORD=shapes.txt python train.py
        model(x)                             # each new (op, layout, shape) is appended once
    tuned.autotune(shapes_from="shapes.txt", budget=120)   # tunes exactly those
    model(x)                                 # now runs the tuned kernels (describe: "exact")

autotune runs the `autotune` program (bundled with the package, or TUNED_AUTOTUNE, or on PATH) in
its own process, as the command line does: its progress goes to this process's stderr, every trial
is durable in the database as it is measured, and Ctrl-C ends it after the trial in hand.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

from ._library import lib

_record_path = os.environ.get("TUNED_RECORD") or None


def set_record(path):
    """Appends each new problem this process calls to the file at path, one line each (None
    stops); `autotune --shapes-from path` (or tuned.autotune(shapes_from=path)) tunes them."""
    global _record_path
    from . import _check
    _check(lib.tuned_set_record(None if path is None else os.fsencode(path)))
    _record_path = None if path is None else os.fspath(path)


@contextlib.contextmanager
def recording(path):
    """Records the problems called inside the block into path (see set_record); what was being
    recorded before is recorded again after it."""
    previous = _record_path
    set_record(path)
    try:
        yield path
    finally:
        set_record(previous)


def _autotune_program():
    candidates = [os.environ.get("TUNED_AUTOTUNE"),
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "autotune"),
                  shutil.which("autotune")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(
        "tuned.autotune needs the autotune program: build the package with it (pip install "
        "./python builds it), set TUNED_AUTOTUNE to its path, or put it on PATH")


def _shape_text(shape):
    if isinstance(shape, str):
        return shape
    return "x".join(str(int(d)) for d in shape)


def autotune(op="gemm", shapes=None, layout=None, budget=None, *, shapes_from=None, db=None,
             device=0, max_trials=None, strategy=None, seed=None, verbose=False, quiet=False):
    """Tunes op for shapes ("MxNxK" strings or (m, n, k) tuples; None: the op's default set) in
    layout (gemm: "NN", "NT", "TN", "TT"), or the problems of a recorded shapes file, within
    budget seconds (None: 60 per shape), on CUDA device `device`, into the database db (None:
    the one this process uses). Returns the results table: one dict per problem (op, layout,
    shape, ms, rate, unit, baseline_ms, ratio, trials, ok, config, note). Calls made afterwards
    in this process use the results."""
    from . import _database_path, set_database
    if shapes is not None and shapes_from is not None:
        raise ValueError("give shapes or shapes_from, not both")
    if isinstance(shapes, (str, tuple)):
        shapes = [shapes]
    args = [_autotune_program(), "--op", str(op), "--device", str(int(device))]
    for shape in shapes or []:
        args += ["--shape", _shape_text(shape)]
    options = {"--layout": layout, "--budget": budget, "--max-trials": max_trials,
               "--strategy": strategy, "--seed": seed,
               "--shapes-from": None if shapes_from is None else os.fspath(shapes_from),
               "--db": os.fspath(db) if db is not None else _database_path()}  # None: default
    for flag, value in options.items():
        if value is not None:
            args += [flag, str(value)]
    if verbose:
        args.append("--verbose")
    with tempfile.TemporaryDirectory(prefix="tuned-autotune-") as folder:
        results = os.path.join(folder, "results.json")
        args += ["--json", results]
        # Progress lines are passed on as they come; the last ones say why a run failed.
        tail = []
        with subprocess.Popen(args, stdout=subprocess.DEVNULL if quiet else None,
                              stderr=subprocess.PIPE, text=True, errors="replace") as process:
            try:
                for line in process.stderr:
                    if not quiet:
                        sys.stderr.write(line)
                    tail = (tail + [line.rstrip("\n")])[-5:]
            finally:
                code = process.wait()  # Ctrl-C reached it too: it ends after the trial in hand
        rows = []
        if os.path.exists(results):
            with open(results) as f:
                rows = json.load(f)["rows"]
    # This process's choices were made before the tuning: they are made again from the database.
    set_database(_database_path())
    message = next((line for line in reversed(tail) if line.startswith("autotune: ")), "")
    if code == 2:
        raise ValueError(message or "autotune refused its arguments")
    if code == 130:
        raise KeyboardInterrupt("autotune interrupted: what it measured is in the database")
    if code != 0:
        raise RuntimeError(f"autotune failed (exit {code}): {message or ' '.join(tail[-1:])}")
    return rows
