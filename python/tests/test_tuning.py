"""tuned.autotune's mapping of keywords onto the autotune program's command line, and
tuned.results' listing of a tuning database, without a GPU: autotune runs a stand-in program
(TUNED_AUTOTUNE) that records its arguments and writes a --json table, and, where this build's
real autotune is found, is held to that program's --help and its refusals; results reads real
databases through libtuned (one made by the library itself, with rows added by sqlite3), and
never changes a byte of them.
Run: TUNED_LIBRARY=.../libtuned.so python3 -m unittest discover -s python/tests"""
import contextlib
import hashlib
import io
import json
import math
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
import warnings
from unittest import mock

PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if os.environ.get("TUNED_TEST_INSTALLED") != "1":  # else the installed package is tested
    sys.path.insert(0, PACKAGE_ROOT)
import tuned  # noqa: E402
from tuned import tuning  # noqa: E402

# The stand-in program: its arguments one per line into $TUNED_TEST_ARGUMENTS, the --config file
# it was given into $TUNED_TEST_ARGUMENTS.toml, a line on stderr ($TUNED_TEST_STDERR), the rows of
# $TUNED_TEST_ROWS into its --json file, and exit $TUNED_TEST_EXIT.
FAKE_AUTOTUNE = """#!/bin/sh
printf '%s\\n' "$@" > "$TUNED_TEST_ARGUMENTS"
for argument in "$@"; do
  case "$argument" in
    --json=*) json="${argument#--json=}" ;;
    --config=*) cp "${argument#--config=}" "$TUNED_TEST_ARGUMENTS.toml" ;;
  esac
done
echo "${TUNED_TEST_STDERR:-[fake] progress}" >&2
[ -n "$json" ] && printf '%s' "$TUNED_TEST_ROWS" > "$json"
exit "${TUNED_TEST_EXIT:-0}"
"""

ROWS = [{"op": "gemm", "layout": "NN", "shape": "8x8x8", "ms": 0.5, "config": "BM=16"}]


def real_autotune():
    """This build's autotune program, or None: beside the library's build (tools/), in the
    installed prefix (bin/), bundled with the package, in the repository's build folder (what
    scripts/test.sh builds), or on PATH."""
    candidates = []
    library = os.environ.get("TUNED_LIBRARY")
    if library:
        folder = os.path.dirname(os.path.realpath(library))
        candidates += [os.path.join(folder, "tools", "autotune"),
                       os.path.join(folder, "..", "bin", "autotune")]
    candidates += [os.path.join(os.path.dirname(tuning.__file__), "bin", "autotune"),
                   os.path.join(PACKAGE_ROOT, "..", "build", "tools", "autotune"),
                   shutil.which("autotune")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def has_gpu():
    return os.path.exists("/usr/bin/nvidia-smi") and \
        subprocess.run(["nvidia-smi"], capture_output=True).returncode == 0


class WithFakeAutotune(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tuned-test-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        program = os.path.join(self.folder, "autotune")
        with open(program, "w") as f:
            f.write(FAKE_AUTOTUNE)
        os.chmod(program, 0o755)
        self.recorded = os.path.join(self.folder, "arguments")
        environment = mock.patch.dict(os.environ, {
            "TUNED_AUTOTUNE": program, "TUNED_TEST_ARGUMENTS": self.recorded,
            "TUNED_TEST_ROWS": json.dumps({"device": "fake", "rows": ROWS}),
            "TUNED_TEST_EXIT": "0"})
        environment.start()
        self.addCleanup(environment.stop)
        # This process's database is the default one (no set_database), so no --db is added.
        database = mock.patch.object(tuned, "_database", None)
        database.start()
        self.addCleanup(database.stop)

    def arguments(self, **keywords):
        """The program's arguments for tuned.autotune(**keywords), --json's value left out."""
        keywords.setdefault("quiet", True)
        self.assertEqual(tuned.autotune(**keywords), ROWS)
        with open(self.recorded) as f:
            passed = f.read().splitlines()
        self.assertRegex(passed[-1], r"^--json=.*results\.json$")
        return passed[:-1]


class AutotuneArguments(WithFakeAutotune):
    def test_every_keyword_becomes_its_flag(self):
        db = os.path.join(self.folder, "t.db")
        config = pathlib.Path(self.folder, "options.toml")
        shapes = os.path.join(self.folder, "shapes.txt")
        self.assertEqual(
            self.arguments(op="transpose", shapes=[(1000, 4097), "512x256"], layout="T",
                           budget=2.5, device=[0, 2], max_trials=7, patience=3,
                           strategy="random", seed=42, db=db, config=config, batch=4,
                           remeasure=True, no_wait=True, flush_l2=True, verbose=True),
            ["--op=transpose", "--shape=1000x4097", "--shape=512x256", "--layout=T",
             "--budget=2.5", "--max-trials=7", "--patience=3", "--strategy=random", "--seed=42",
             "--device=0,2", f"--db={db}", f"--config={config}", "--batch=4", "--verbose",
             "--remeasure", "--no-wait", "--flush-l2"])
        self.assertEqual(self.arguments(shapes_from=pathlib.Path(shapes)),
                         [f"--shapes-from={shapes}"])

    def test_nothing_given_passes_nothing_the_program_has_a_default_for(self):
        self.assertEqual(self.arguments(), [])
        self.assertEqual(self.arguments(remeasure=False, no_wait=False, flush_l2=False), [])

    def test_the_database_of_this_process_is_the_default(self):
        with mock.patch.object(tuned, "_database", "/x/mine.db"), \
                mock.patch.object(tuning, "lib") as library:  # set_database after the run
            library.tuned_set_database.return_value = 0
            self.assertEqual(self.arguments(), ["--db=/x/mine.db"])
            self.assertEqual(self.arguments(db="/y/other.db"), ["--db=/y/other.db"])

    def test_devices(self):
        for device, text in [(3, "3"), ("all", "all"), ([1], "1"), ((0, 1, 3), "0,1,3"),
                             ("0,1", "0,1")]:
            with self.subTest(device=device):
                self.assertEqual(self.arguments(device=device), [f"--device={text}"])

    def test_shapes_of_every_rank_and_form(self):
        for shapes, texts in [("8x8x8", ["8x8x8"]), ((8, 16, 32), ["8x16x32"]),
                              ([8, 16, 32], ["8x16x32"]), ([(4096, 4096)], ["4096x4096"]),
                              ((1000, 127, 3, 16), ["1000x127x3x16"]),
                              (iter(["1x2x3", (4, 5)]), ["1x2x3", "4x5"])]:
            with self.subTest(shapes=shapes):
                self.assertEqual(self.arguments(shapes=shapes), [f"--shape={t}" for t in texts])

    def test_budget_as_given(self):
        self.assertEqual(self.arguments(budget=60), ["--budget=60"])
        self.assertEqual(self.arguments(budget=0.25), ["--budget=0.25"])

    def test_space_becomes_a_config_file(self):
        self.assertEqual(len(self.arguments(space={"BM": [64, 128], "MMA": 0})), 1)
        with open(self.recorded + ".toml") as f:
            self.assertEqual(f.read(), "[space]\nBM = [64, 128]\nMMA = [0]\n")
        passed = self.arguments(op="entropy", space={"BX": (32,)})
        self.assertEqual(passed[0], "--op=entropy")
        self.assertRegex(passed[1], r"^--config=.*space\.toml$")

    def test_a_value_like_a_flag_stays_a_value(self):
        self.assertEqual(self.arguments(layout="--remeasure", strategy="-v"),
                         ["--layout=--remeasure", "--strategy=-v"])

    def test_progress_goes_to_stderr_unless_quiet(self):
        with mock.patch.object(sys, "stderr", io.StringIO()) as stderr:
            tuned.autotune()
            self.assertEqual(stderr.getvalue(), "[fake] progress\n")
        with mock.patch.object(sys, "stderr", io.StringIO()) as stderr:
            tuned.autotune(quiet=True)
            self.assertEqual(stderr.getvalue(), "")


class AutotuneErrors(WithFakeAutotune):
    def test_wrong_types_and_values_name_the_keyword_before_the_program_runs(self):
        cases = [
            (TypeError, "op must be an op name", {"op": 3}),
            (ValueError, "op must be an op name: non-empty", {"op": ""}),
            (ValueError, "shapes lists no shapes", {"shapes": []}),
            (ValueError, "shapes lists no shapes", {"shapes": ()}),
            (ValueError, r"shapes\[0\] must be a shape: a tuple of one or more", {"shapes": [()]}),
            (TypeError, r"shapes\[0\] must be a shape", {"shapes": [(8, "8", 8)]}),
            (TypeError, "shapes must be a shape or a list of shapes", {"shapes": 5}),
            (ValueError, r"shapes\[1\] must be a size >= 0 .*got -1", {"shapes": (8, -1, 8)}),
            (ValueError, "shapes or shapes_from", {"shapes": "1x1x1", "shapes_from": "x.txt"}),
            (TypeError, "layout must be the op's variant", {"layout": 1}),
            (ValueError, r"budget must be a number of seconds > 0, got 0", {"budget": 0}),
            (ValueError, r"budget must be a number of seconds > 0, got -1", {"budget": -1}),
            (ValueError, r"budget must be .* got nan", {"budget": math.nan}),
            (ValueError, r"budget must be .* got inf", {"budget": math.inf}),
            (TypeError, "budget must be a number of seconds, got str", {"budget": "60"}),
            (TypeError, "budget must be a number of seconds, got bool", {"budget": True}),
            (ValueError, "max_trials must be an integer >= 1, got 0", {"max_trials": 0}),
            (TypeError, "max_trials must be an integer, got float", {"max_trials": 1.5}),
            (ValueError, "patience must be an integer >= 1, got 0", {"patience": 0}),
            (TypeError, "strategy must be a strategy name", {"strategy": ["anneal"]}),
            (ValueError, r"seed must be an integer in 0..2\*\*64-1", {"seed": -1}),
            (ValueError, r"seed must be an integer in 0..2\*\*64-1", {"seed": 2**64}),
            (TypeError, "seed must be an integer, got str", {"seed": "1"}),
            (ValueError, "device must be a CUDA device index >= 0, got -1", {"device": -1}),
            (ValueError, "device lists device 0 twice", {"device": [0, 1, 0]}),
            (ValueError, "device lists no devices", {"device": []}),
            (ValueError, r"device\[1\] must be a CUDA device index >= 0", {"device": [0, -1]}),
            (TypeError, "device must be a CUDA device index, a list of them", {"device": True}),
            (TypeError, "device must be a CUDA device index, a list of them", {"device": 1.0}),
            (TypeError, "db must be a path", {"db": 3}),
            (ValueError, "db must be a path: non-empty", {"db": ""}),
            (ValueError, "db must be a path: non-empty and without NUL", {"db": "a\0b"}),
            (TypeError, "shapes_from must be a path", {"shapes_from": 3}),
            (TypeError, "config must be a path", {"config": ["a.toml"]}),
            (ValueError, "config or space, not both", {"config": "a.toml", "space": {"BM": 64}}),
            (ValueError, "space restricts nothing", {"space": {}}),
            (ValueError, r"space\['BM'\] lists no values", {"space": {"BM": []}}),
            (TypeError, r"space\['BM'\] must be an integer or a list", {"space": {"BM": "64"}}),
            (ValueError, "'B M' is no parameter name", {"space": {"B M": 1}}),
            (ValueError, r"space\['BM'\] must hold 32-bit integers", {"space": {"BM": 2**40}}),
            (TypeError, "space must be a dict", {"space": [("BM", 64)]}),
            (ValueError, "batch must be an integer >= 1, got 0", {"batch": 0}),
            (TypeError, "batch must be an integer, got str", {"batch": "4"}),
            (TypeError, "batch must be an integer, got bool", {"batch": True}),
            (TypeError, "remeasure must be True or False", {"remeasure": "yes"}),
            (TypeError, "flush_l2 must be True or False", {"flush_l2": 1}),
            (TypeError, "quiet must be True or False", {"quiet": None}),
        ]
        for error, pattern, keywords in cases:
            quiet = keywords.pop("quiet", True)
            with self.subTest(**{k: repr(v) for k, v in keywords.items()}):
                with self.assertRaisesRegex(error, pattern):
                    tuned.autotune(quiet=quiet, **keywords)
                self.assertFalse(os.path.exists(self.recorded), "the program ran")

    def test_the_program_s_exit_becomes_an_exception_with_its_message(self):
        os.environ.update(TUNED_TEST_EXIT="2", TUNED_TEST_ROWS="",
                          TUNED_TEST_STDERR="autotune: --layout: must be one of NN, NT")
        with self.assertRaisesRegex(ValueError, "^autotune: --layout: must be one of NN, NT$"):
            tuned.autotune(layout="XX", quiet=True)
        os.environ.update(TUNED_TEST_EXIT="1", TUNED_TEST_STDERR="autotune: no CUDA device")
        with self.assertRaisesRegex(RuntimeError, r"^autotune failed \(exit 1\): autotune: no "
                                                  r"CUDA device$"):
            tuned.autotune(quiet=True)
        os.environ["TUNED_TEST_EXIT"] = "130"
        with self.assertRaisesRegex(KeyboardInterrupt, "what it measured is in the database"):
            tuned.autotune(quiet=True)
        os.environ["TUNED_TEST_EXIT"] = "0"  # a success without its table
        with self.assertRaisesRegex(RuntimeError, "ended without its results table"):
            tuned.autotune(quiet=True)


@unittest.skipIf(real_autotune() is None, "this build's autotune program was not found (beside "
                 "TUNED_LIBRARY's build, bundled, in build/tools, or on PATH)")
class AgainstTheRealProgram(unittest.TestCase):
    """The keywords against the autotune program itself: every option of its --help has one, and
    what it refuses comes back as a ValueError with its message. (It refuses before any GPU or
    database is touched; a run it accepts fails at the device query here, without a GPU.)"""

    def setUp(self):
        self.program = real_autotune()
        self.folder = tempfile.mkdtemp(prefix="tuned-test-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        environment = mock.patch.dict(os.environ, {"TUNED_AUTOTUNE": self.program})
        environment.start()
        self.addCleanup(environment.stop)

    def test_every_option_of_its_help_is_a_keyword(self):
        help_text = subprocess.run([self.program, "--help"], capture_output=True, text=True,
                                   check=True).stdout
        flags = set(re.findall(r"^\s+(?:-\w,)?(--[a-z0-9-]+)", help_text, re.MULTILINE))
        self.assertIn("--shape", flags)  # the help was read
        mapped = set(tuning._OPTIONS.values()) | set(tuning._FLAGS.values())
        # --json carries the rows back; --help and --version are not tuning, nor is the queue; how
        # the program shows its run is this module's (quiet; --progress while not quiet; rows).
        self.assertEqual(flags - mapped, {"--json", "--help", "--version", "--quiet", "--progress",
                                          "--wide"} | tuning.QUEUE_OPTIONS)
        self.assertEqual(mapped - flags, set())

    def test_recorded_spaces_stand_in_for_the_gpu(self):
        here = os.path.dirname(os.path.abspath(__file__))
        record = os.path.join(here, "..", "..", "bench", "replay", "transpose_4096x4096_h100.tsv.gz")
        if not os.path.exists(record):
            self.skipTest("bench/replay is not beside these tests")
        rows = tuned.autotune(op="transpose", shapes="4096x4096", replay=record, max_trials=12,
                              seed=3, db=os.path.join(self.folder, "t.db"), quiet=True)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["shape"], "4096x4096")
        self.assertGreater(rows[0]["ms"], 0)
        self.assertEqual(rows[0]["trials"], 12)
        self.assertEqual(rows[0]["unit"], "runs/s")
        with self.assertRaisesRegex(ValueError, "replay_gpus"):
            tuned.autotune(replay=record, replay_gpus=0, quiet=True)

    def test_its_refusals_are_value_errors_with_its_message(self):
        db = os.path.join(self.folder, "t.db")
        with self.assertRaisesRegex(ValueError, r"^autotune: --layout: must be one of NN, .*"
                                                r"got 'XX'"):
            tuned.autotune(layout="XX", db=db, quiet=True)
        with self.assertRaisesRegex(ValueError, r"^autotune: gemm shape: needs MxNxK\[xBATCH\] "
                                                r"\(3 to 4 sizes\), got 2$"):
            tuned.autotune(shapes=(8, 8), db=db, quiet=True)
        with self.assertRaisesRegex(ValueError, "^autotune: space: unknown parameter 'NOPE'"):
            tuned.autotune(shapes=(64, 64, 64), space={"NOPE": 1}, db=db, quiet=True)
        self.assertFalse(os.path.exists(db))

    @unittest.skipIf(has_gpu(), "a GPU is present: an accepted run would tune")
    def test_every_keyword_is_accepted_in_the_form_it_is_passed(self):
        db = os.path.join(self.folder, "t.db")
        config = os.path.join(self.folder, "options.toml")
        with open(config, "w") as f:
            f.write('strategy = "random"\n')
        with self.assertRaisesRegex(RuntimeError, r"exit 3\): autotune: --device 0,1: no CUDA"):
            tuned.autotune(op="gemm", shapes=["64x64x64", (32, 32, 32)], layout="nt", budget=0.5,
                           device=[0, 1], max_trials=2, patience=1, strategy="anneal", seed=7,
                           db=db, config=config, remeasure=True, no_wait=True, flush_l2=True,
                           verbose=True, quiet=True)
        with self.assertRaisesRegex(RuntimeError, r"exit 3\).*no CUDA"):
            tuned.autotune(op="entropy", shapes=(256, 256, 2, 16), layout="u8",
                           space={"BX": [32, 64]}, db=db, quiet=True)
        self.assertFalse(os.path.exists(db))


# ----- results ----------------------------------------------------------------------------------

H100 = "NVIDIA H100 80GB HBM3"
UUIDS = ["GPU-11111111-2222-3333-4444-555555555555", "GPU-11112222-0000-0000-0000-000000000000",
         "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"]

# (device, op, variant, shape, alignment, config, kernel, ms, rate, unit, baseline_ms, session,
#  updated_at, origin, template_hash, source): a row of each op, one of a GPU the devices table
# does not list, one with no unit stored (rows older than schema 5), one with no baseline.
BESTS = [
    (UUIDS[0], "gemm", "TN", "4096x1024x512", 4, "GEMV=0,BM=128,BN=64", "gemm_tn", 0.25, 68.75,
     "TFLOP/s", 0.5, 3, "2026-01-02T03:04:05Z", "autotune", "feedface", ""),
    (UUIDS[1], "transpose", "T", "1000x4097", 1, "TILE=32,RPT=4", "transpose_t", 1.0, 32.8, "",
     0.0, None, "2026-01-03T00:00:00Z", "first-use", "", "host:/elsewhere/tuned.db"),
    ("GPU-unlisted", "entropy", "u8", "1000x127x3x16", 16, "not a list", "entropy_u8", 2.0, 0.5,
     "GB/s", 1.0, None, "2026-01-04T00:00:00Z", "autotune", "abc", ""),
]


def expected(row, device_name):
    (uuid, op, variant, shape, alignment, config, kernel, ms, rate, unit, baseline, session,
     updated, origin, template, source) = row
    params = None
    if config != "not a list":
        params = {k: int(v) for k, v in (item.split("=") for item in config.split(","))}
    return {"device_uuid": uuid, "device_name": device_name, "op": op, "variant": variant,
            "layout": variant, "shape": tuple(int(d) for d in shape.split("x")),
            "alignment": alignment, "config": config, "params": params, "kernel_name": kernel,
            "ms": ms, "rate": rate,
            "rate_unit": unit or {"gemm": "TFLOP/s"}.get(op, "GB/s"),
            "baseline_ms": baseline or None, "ratio": baseline / ms if baseline else None,
            "session_id": session, "updated_at": updated, "origin": origin,
            "template_hash": template, "source": source}


# A child Python that imports the package under test: sys.argv[2] is put first on its path
# ("" where the installed package is tested).
CHILD = "import sys; sys.argv[2] and sys.path.insert(0, sys.argv[2]); import tuned; "
CHILD_PATH = "" if os.environ.get("TUNED_TEST_INSTALLED") == "1" else PACKAGE_ROOT


def make_database(path, bests=BESTS):
    """A tuned database at path: its schema made by libtuned itself (set_database on a missing
    file creates it, in a child process so this one keeps its own database), then devices and
    bests inserted with sqlite3, naming the columns the library reads."""
    subprocess.run([sys.executable, "-c", CHILD + "tuned.set_database(sys.argv[1])", path,
                    CHILD_PATH], check=True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        for uuid, name in [(UUIDS[0], H100), (UUIDS[1], H100), (UUIDS[2], "NVIDIA H200")]:
            db.execute("INSERT INTO devices (uuid, name, cc_major, cc_minor, sm_count, "
                       "memory_bytes, clock_khz, first_seen, last_seen) "
                       "VALUES (?, ?, 9, 0, 132, 85899345920, 1980000, 'now', 'now')",
                       (uuid, name))
        for row in bests:
            (uuid, op, variant, shape, alignment, config, kernel, ms, rate, unit, baseline,
             session, updated, origin, template, source) = row
            dims = (shape.split("x") + [None] * 3)[:3] if re.fullmatch(r"[0-9x]+", shape) \
                else [None] * 3
            db.execute("INSERT INTO best (device_uuid, op, variant, shape, d0, d1, d2, "
                       "alignment, config, kernel_name, ms, rate, rate_unit, baseline_ms, "
                       "session_id, updated_at, origin, template_hash, source) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (uuid, op, variant, shape, *dims, alignment, config, kernel, ms, rate,
                        unit, baseline, session, updated, origin, template, source))
        db.commit()
    # sqlite3 has closed the last connection: the WAL was checkpointed and removed.
    assert not os.path.exists(path + "-wal"), "a -wal file remains"


def state(folder):
    """Every file of folder with its bytes' hash: what a listing must leave as it was."""
    found = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                found[name] = hashlib.sha256(f.read()).hexdigest()
        else:
            found[name] = "folder" if os.path.isdir(path) else "other"
    return found


class Results(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tuned-test-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.path = os.path.join(self.folder, "tuned.db")

    def test_lists_every_best_as_a_dict(self):
        make_database(self.path)
        names = {UUIDS[0]: H100, UUIDS[1]: H100}
        self.assertEqual(tuned.results(self.path),
                         [expected(row, names.get(row[0])) for row in
                          sorted(BESTS, key=lambda row: row[0])])  # tunedb's order: by device

    def test_filters_by_op_and_device(self):
        make_database(self.path)

        def listed(**keywords):
            return [(row["device_uuid"], row["op"])
                    for row in tuned.results(pathlib.Path(self.path), **keywords)]
        self.assertEqual(listed(op="transpose"), [(UUIDS[1], "transpose")])
        self.assertEqual(listed(device=H100), [(UUIDS[0], "gemm"), (UUIDS[1], "transpose")])
        self.assertEqual(listed(device="GPU-1111111"), [(UUIDS[0], "gemm")])  # a unique prefix
        self.assertEqual(listed(device="GPU-unlisted"), [("GPU-unlisted", "entropy")])
        self.assertEqual(listed(device="GPU-ffff"), [])
        self.assertEqual(listed(op="gemm", device="NVIDIA H200"), [])
        with self.assertRaisesRegex(tuned.Error, "device 'GPU-1111' begins 2 recorded uuids"):
            tuned.results(self.path, device="GPU-1111")
        with self.assertRaisesRegex(tuned.Error, r"op: unknown op 'gemv' \(this build knows "
                                                 r"gemm, transpose, entropy\)") as raised:
            tuned.results(self.path, op="gemv")
        self.assertEqual(raised.exception.status, 1)  # invalid argument

    def test_a_listing_changes_no_byte_and_makes_no_file(self):
        make_database(self.path)
        before = state(self.folder)
        self.assertEqual(list(before), ["tuned.db"])
        for keywords in [{}, {"op": "gemm"}, {"device": H100}]:
            tuned.results(self.path, **keywords)
        self.assertEqual(state(self.folder), before)

    def test_a_missing_file_holds_nothing_and_stays_missing(self):
        self.assertEqual(tuned.results(self.path), [])
        self.assertEqual(os.listdir(self.folder), [])

    def test_a_file_that_is_no_tuned_database_is_an_error_naming_it(self):
        other = os.path.join(self.folder, "other.db")
        with contextlib.closing(sqlite3.connect(other)) as db:
            db.execute("CREATE TABLE orders (id INTEGER, total REAL)")
            db.commit()
        damaged = os.path.join(self.folder, "damaged.db")
        with open(damaged, "wb") as f:
            f.write(bytes(range(256)) * 64)
        empty = os.path.join(self.folder, "empty.db")
        open(empty, "wb").close()
        folder = os.path.join(self.folder, "folder.db")
        os.mkdir(folder)
        before = state(self.folder)
        for path, why in [(other, "not a tuned database"), (damaged, "not a database"),
                          (empty, "empty"), (folder, "folder")]:
            with self.subTest(path=path):
                with self.assertRaises(tuned.Error) as raised:
                    tuned.results(path)
                self.assertIn(f"'{path}'", str(raised.exception))
                self.assertIn(why, str(raised.exception))
                self.assertEqual(raised.exception.status, 7)  # database error
        self.assertEqual(state(self.folder), before)

    def test_rows_this_build_cannot_read_are_left_out_with_a_warning(self):
        malformed = BESTS[0][:3] + ("4096xAx512",) + BESTS[0][4:]
        make_database(self.path, [malformed, BESTS[1]])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            listed = tuned.results(self.path)
        self.assertEqual([row["op"] for row in listed], ["transpose"])
        self.assertEqual([str(w.message) for w in caught],
                         [f"{self.path}: 1 best row(s) this build cannot read were left out"])
        self.assertIs(caught[0].category, RuntimeWarning)

    def test_no_db_lists_the_database_this_process_uses(self):
        make_database(self.path)
        code = (CHILD + "import json; tuned.set_database(sys.argv[1]); "
                "print(json.dumps([r['op'] for r in tuned.results(op='gemm')]))")
        run = subprocess.run([sys.executable, "-c", code, self.path, CHILD_PATH],
                             capture_output=True, text=True, check=True)
        self.assertEqual(json.loads(run.stdout), ["gemm"])

    def test_argument_errors(self):
        with self.assertRaisesRegex(TypeError, "db must be a path"):
            tuned.results(3)
        with self.assertRaisesRegex(ValueError, "db must be a path: non-empty"):
            tuned.results("")
        with self.assertRaisesRegex(TypeError, "op must be an op name, got int"):
            tuned.results(self.path, op=3)
        with self.assertRaisesRegex(ValueError, "op must be an op name: non-empty"):
            tuned.results(self.path, op="")
        with self.assertRaisesRegex(TypeError, "device must be a GPU uuid, its prefix or name"):
            tuned.results(self.path, device=0)

    def test_exported(self):
        self.assertIn("results", tuned.__all__)
        self.assertIn("autotune", tuned.__all__)


if __name__ == "__main__":
    unittest.main()
