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
import math
import numbers
import operator
import os
import re
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


# ----- argument checks: each names the keyword and its rule ---------------------------------------

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


def _whole(value, name, minimum, maximum=None, rule=None):
    """An integer (not a bool) in [minimum, maximum], or TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = operator.index(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} {rule or f'must be an integer >= {minimum}'}, got {value}")
    return value


def _flag(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def _seconds(value, name):
    """A number of seconds > 0 as the command line's text."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        value = operator.index(value)
        if value > 0:
            return str(value)
    elif math.isfinite(value) and value > 0:
        return repr(float(value))
    raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")


def _is_dims(value):
    """Whether value is one shape given as integers: a tuple or list of them (not a string)."""
    return isinstance(value, (tuple, list)) and all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in value)


def _shape_text(shape, name="shape"):
    """"MxNxK" of a shape string (as given: the program reads it) or of a tuple of sizes of any
    rank (gemm M, N, K; transpose rows, cols; entropy rows, cols, radius, levels)."""
    if isinstance(shape, str):
        return _text(shape, name, 'a shape like "4096x1024x512" or a tuple of integers')
    if not _is_dims(shape):
        raise TypeError(f'{name} must be a shape: a string like "4096x1024x512" or a tuple of '
                        f"integers, got {shape!r}")
    if not shape:
        raise ValueError(f"{name} must be a shape: a tuple of one or more integers, got ()")
    for i, d in enumerate(shape):
        _whole(d, f"{name}[{i}]", 0, rule="must be a size >= 0 (the op says which it takes)")
    return "x".join(str(operator.index(d)) for d in shape)


def _shape_texts(shapes):
    """The --shape values of shapes: one shape (a string, or a tuple or list of integers) or an
    iterable of them."""
    if isinstance(shapes, (list, tuple)) and not shapes:
        raise ValueError("shapes lists no shapes (None tunes the op's default set)")
    if isinstance(shapes, str) or _is_dims(shapes):
        return [_shape_text(shapes, "shapes")]
    try:
        items = list(shapes)
    except TypeError:
        raise TypeError(f"shapes must be a shape or a list of shapes (strings like "
                        f'"4096x1024x512" or tuples of integers), got '
                        f"{type(shapes).__name__}") from None
    if not items:
        raise ValueError("shapes lists no shapes (None tunes the op's default set)")
    return [_shape_text(shape, f"shapes[{i}]") for i, shape in enumerate(items)]


def _device_text(device):
    """--device's text: an index, a list of distinct indices, "all", or the program's own text
    ("0,1,3")."""
    if isinstance(device, str):
        return _text(device, "device", 'a CUDA device index, a list of them, or "all"')
    if isinstance(device, (list, tuple)):
        if not device:
            raise ValueError("device lists no devices (give an index, a list of them, or \"all\")")
        indices = [_whole(d, f"device[{i}]", 0, rule="must be a CUDA device index >= 0")
                   for i, d in enumerate(device)]
        repeated = sorted({d for d in indices if indices.count(d) > 1})
        if repeated:
            raise ValueError(f"device lists device {repeated[0]} twice: the indices must be "
                             f"distinct, got {list(indices)}")
        return ",".join(map(str, indices))
    if isinstance(device, bool) or not isinstance(device, numbers.Integral):
        raise TypeError(f'device must be a CUDA device index, a list of them, or "all", got '
                        f"{type(device).__name__}")
    return str(_whole(device, "device", 0, rule="must be a CUDA device index >= 0"))


_SPACE_NAME = re.compile(r"[A-Za-z0-9_-]+")  # a TOML bare key: the op's parameter names


def _space_toml(space):
    """A TOML file's text restricting the op's parameters: [space] NAME = [values]."""
    if not isinstance(space, dict):
        raise TypeError(f"space must be a dict of parameter name -> value or list of values, "
                        f"got {type(space).__name__}")
    if not space:
        raise ValueError("space restricts nothing (an empty dict): leave it out to tune the "
                         "whole space")
    lines = ["[space]"]
    for key, values in space.items():
        if not isinstance(key, str) or not _SPACE_NAME.fullmatch(key):
            raise ValueError(f"space: {key!r} is no parameter name (letters, digits, '_' or '-')")
        if isinstance(values, numbers.Integral) and not isinstance(values, bool):
            values = [values]
        if not _is_dims(values):
            raise TypeError(f"space[{key!r}] must be an integer or a list of integers, got "
                            f"{values!r}")
        if not values:
            raise ValueError(f"space[{key!r}] lists no values (leave the parameter out to keep "
                             f"all of them)")
        checked = [_whole(v, f"space[{key!r}]", -2**31, 2**31 - 1,
                          "must hold 32-bit integers") for v in values]
        lines.append(f"{key} = [{', '.join(map(str, checked))}]")
    return "\n".join(lines) + "\n"


# The autotune program's options (tools/autotune_options.cpp, `autotune --help`) by keyword: every
# one but --json (the rows are read through it), --help and --version. tests hold this table to the
# program's --help, so an option added there is added here too.
_OPTIONS = {
    "op": "--op", "shapes": "--shape", "shapes_from": "--shapes-from", "layout": "--layout",
    "budget": "--budget", "max_trials": "--max-trials", "patience": "--patience",
    "strategy": "--strategy", "seed": "--seed", "device": "--device", "db": "--db",
    "config": "--config", "batch": "--batch", "replay": "--replay", "replay_gpus": "--replay-gpus",
    "replay_pace": "--replay-pace", "report": "--report",
}
# The queue's modes and their options (--enqueue, --worker, --status, --store, ...) are the
# program's, not a tuning run's: they return no results table (README, "Many machines").
QUEUE_OPTIONS = {"--enqueue", "--worker", "--status", "--store", "--device-model", "--lease",
                 "--wait", "--node"}
_FLAGS = {"verbose": "--verbose", "remeasure": "--remeasure", "no_wait": "--no-wait",
          "flush_l2": "--flush-l2"}


def _autotune_arguments(op, shapes, layout, budget, shapes_from, db, device, max_trials, patience,
                        strategy, seed, config, space, batch, flags, replay=None, replay_gpus=None,
                        replay_pace=None, report=None):
    """The program's arguments but --json, each checked (TypeError or ValueError naming the
    keyword), and the [space] file's text (None: none). Values are passed as --flag=value, so that
    no value is ever read as a flag."""
    if shapes is not None and shapes_from is not None:
        raise ValueError("give shapes or shapes_from, not both")
    if config is not None and space is not None:
        raise ValueError("give config or space, not both (a config file restricts the space in "
                         "its [space] table)")
    values = {
        "op": None if op is None else _text(op, "op", "an op name"),
        "shapes": None if shapes is None else _shape_texts(shapes),
        "shapes_from": None if shapes_from is None else _path(shapes_from, "shapes_from"),
        "layout": None if layout is None else _text(layout, "layout", "the op's variant"),
        "budget": None if budget is None else _seconds(budget, "budget"),
        "max_trials": None if max_trials is None else _whole(max_trials, "max_trials", 1),
        "patience": None if patience is None else _whole(patience, "patience", 1),
        "strategy": None if strategy is None else _text(strategy, "strategy", "a strategy name"),
        "seed": None if seed is None else _whole(
            seed, "seed", 0, 2**64 - 1, "must be an integer in 0..2**64-1 (0: from the clock)"),
        "device": None if device is None else _device_text(device),
        "db": None if db is None else _path(db, "db"),
        "config": None if config is None else _path(config, "config"),
        "batch": None if batch is None else _whole(batch, "batch", 1),
        "replay": None if replay is None else [
            _path(p, "replay") for p in (replay if isinstance(replay, (list, tuple)) else [replay])],
        "replay_gpus": None if replay_gpus is None else _whole(replay_gpus, "replay_gpus", 1),
        "replay_pace": None if replay_pace is None else _whole(replay_pace, "replay_pace", 0),
        "report": None if report is None else _path(report, "report"),
    }
    toml = None if space is None else _space_toml(space)
    arguments = []
    for key, flag in _OPTIONS.items():
        value = values[key]
        for item in value if isinstance(value, list) else [] if value is None else [value]:
            arguments.append(f"{flag}={item}")
    for key, flag in _FLAGS.items():
        if _flag(flags[key], key):
            arguments.append(flag)
    return arguments, toml


def autotune(op=None, shapes=None, layout=None, budget=None, *, shapes_from=None, db=None,
             device=None, max_trials=None, patience=None, strategy=None, seed=None, config=None,
             space=None, batch=None, remeasure=False, no_wait=False, flush_l2=False,
             verbose=False, quiet=False, replay=None, replay_gpus=None, replay_pace=None,
             report=None):
    """Runs the autotune program with the options of its command line, as keywords; returns its
    results table: one dict per problem (op, layout, shape, ms, rate, unit, baseline,
    baseline_ms, ratio, trials, ok, config, note, gpu, device). Calls made afterwards in this
    process use the results. None (or False) leaves an option to the program: its default, or
    the config file's value.

    op: "gemm" (the program's default), "transpose" or "entropy". shapes: one shape or a list of
    them, each a string ("4096x1024x512") or a tuple of integers of the op's rank (gemm M, N, K;
    transpose rows, cols; entropy rows, cols, radius, levels); None: the op's default set.
    shapes_from: a file of recorded problems (tuned.recording, TUNED_RECORD), instead of shapes.
    layout: the op's variant (gemm "NN", "NT", "TN", "TT", or with a compute type "NN-tf32", ...).
    device: a CUDA device index (the program's default 0), a list of them, or "all": the shapes
    are shared out over those GPUs. budget: seconds for the whole run (default 60 per shape; over
    several GPUs each shape gets the same share; the program has no budget per shape: 60 *
    len(shapes) gives each about 60 s); max_trials and patience: per shape, the most candidates
    timed and how many in a row may find nothing faster before it ends. strategy (the program's
    --help lists them) and seed (0: from the clock): the search. db: the database (None: the one
    this process uses, set_database's, which then overrides a config file's db, else the
    program's default). config: a TOML file of options (the keywords override it); space: a
    restriction of the op's parameters, {"BM": [64, 128], "MMA": 0}, written to such a file (not
    with config). batch: passed on as --batch N, for the program to check (batched gemm tuning,
    `autotune --op gemm --batch N`). remeasure, no_wait, flush_l2, verbose: the program's flags
    of those names. quiet: nothing printed here. replay (a recorded space's file or folder, or a
    list of them), replay_gpus, replay_pace: recorded spaces stand in for the GPUs (--replay).
    report: a file for the run's tuning report, one HTML page (--report).

    A wrong type or value raises TypeError or ValueError naming the keyword before the program
    starts; what the program refuses (exit 2) raises ValueError with its message, another failure
    RuntimeError, and an interrupted run KeyboardInterrupt (what was measured is kept)."""
    from . import _database_path, set_database
    if db is None:
        db = _database_path()  # None: the program's default, as this process's
    arguments, space_toml = _autotune_arguments(
        op, shapes, layout, budget, shapes_from, db, device, max_trials, patience, strategy, seed,
        config, space, batch,
        {"verbose": verbose, "remeasure": remeasure, "no_wait": no_wait, "flush_l2": flush_l2},
        replay, replay_gpus, replay_pace, report)
    _flag(quiet, "quiet")
    args = [_autotune_program()] + arguments
    if not quiet:  # stderr is a pipe here: asked for, the program prints its progress as lines
        args.append("--progress")
    with tempfile.TemporaryDirectory(prefix="tuned-autotune-") as folder:
        if space_toml is not None:
            space_file = os.path.join(folder, "space.toml")
            with open(space_file, "w") as f:
                f.write(space_toml)
            args.append(f"--config={space_file}")
        results = os.path.join(folder, "results.json")
        args.append(f"--json={results}")
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
        rows = None
        if code == 0:  # (after a failure the table is not returned: its message is)
            try:
                with open(results) as f:
                    rows = json.load(f)["rows"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                rows = e
    # This process's choices were made before the tuning: they are made again from the database.
    set_database(_database_path())
    message = next((line for line in reversed(tail) if line.startswith("autotune: ")), "")
    if code == 2:
        raise ValueError(message or "autotune refused its arguments")
    if code == 130:
        raise KeyboardInterrupt("autotune interrupted: what it measured is in the database")
    if code != 0:
        raise RuntimeError(f"autotune failed (exit {code}): {message or ' '.join(tail[-1:])}")
    if isinstance(rows, Exception):
        raise RuntimeError(f"autotune ended without its results table (--json): {rows}")
    return rows


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
