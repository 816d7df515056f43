"""Tuning from Python: the recorder, the tuner and what the database holds.

    with tuned.recording("shapes.txt"):      # or TUNED_RECORD=shapes.txt python train.py
        model(x)                             # each new (op, layout, shape) is appended once
    tuned.autotune(shapes_from="shapes.txt", budget=120)   # tunes exactly those
    model(x)                                 # now runs the tuned kernels (describe: "exact")
    tuned.results(op="gemm")                 # the bests the database holds, as dicts

autotune runs the `autotune` program (bundled with the package, or TUNED_AUTOTUNE, or on PATH) in
its own process, as the command line does: its progress goes to this process's stderr, every trial
is durable in the database as it is measured, and Ctrl-C ends it after the trial in hand. results
reads the database through libtuned (tuned_results_json), as `tunedb best` does: it never writes.
"""
import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

from . import _library
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


def _text(value, name, what="a string"):
    """A non-empty str without NUL (a command-line argument), or TypeError/ValueError naming it."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    if not value or "\0" in value:
        raise ValueError(f"{name} must be {what}: non-empty and without NUL characters, got "
                         f"{value!r}")
    return value


def _path(value, name):
    """A path (str, bytes or os.PathLike) as text, or TypeError/ValueError naming it."""
    try:
        path = os.fsdecode(os.fspath(value))
    except TypeError:
        raise TypeError(f"{name} must be a path (str or os.PathLike), got "
                        f"{type(value).__name__}") from None
    return _text(path, name, "a path")


# ----- what the database holds --------------------------------------------------------------------

def results(db=None, op=None, device=None):
    """The best configurations the tuning database holds: one dict per (device, op, variant,
    shape, alignment), in `tunedb best`'s order, with device_uuid, device_name (None where the
    GPU is not recorded), op, variant (and layout, the same: the name autotune's rows use), shape
    (a tuple of the op's sizes), alignment, config (its canonical text) and params (a dict
    parameter -> int; None where the text is no NAME=INTEGER list), kernel_name, ms, rate,
    rate_unit ("TFLOP/s", "GB/s"; None where unknown), baseline_ms and ratio (None where no
    baseline was measured), session_id (None: none), updated_at (ISO 8601 UTC), origin
    ("autotune" or "first-use"), template_hash and source ("": measured in this database, else the
    file it was merged from).

    db: the database file (None: the one this process uses, set_database's, else TUNED_DB, else
    the default); op: one op's rows ("gemm", "transpose", "entropy"); device: one GPU's rows, by
    its uuid, the only recorded uuid it begins, or its model's name (every GPU of that model).

    Only reads, through libtuned as `tunedb best` does: not a byte of the file changes and no file
    appears beside it. A missing file holds nothing tuned: []. A file that is no tuned database
    (another application's, damaged, empty, a folder) raises tuned.Error naming the path; rows
    this build cannot read are left out with a RuntimeWarning saying how many."""
    from . import _raise
    path = None if db is None else os.fsencode(_path(db, "db"))
    op = None if op is None else _text(op, "op", "an op name")
    device = None if device is None else _text(device, "device", "a GPU uuid, its prefix or name")
    text = ctypes.c_void_p()
    status = lib.tuned_results_json(path, None if op is None else op.encode(),
                                    None if device is None else device.encode(),
                                    ctypes.byref(text))
    if status != _library.STATUS_SUCCESS:
        _raise(status)
    try:
        document = json.loads(ctypes.string_at(text.value).decode())
    finally:
        lib.tuned_free(text)
    if document["skipped"]:
        warnings.warn(f"{document['database']}: {document['skipped']} best row(s) this build "
                      f"cannot read were left out", RuntimeWarning, stacklevel=2)
    rows = []
    for best in document["bests"]:
        best["shape"] = tuple(best["shape"])
        best["layout"] = best["variant"]
        rows.append(best)
    return rows
