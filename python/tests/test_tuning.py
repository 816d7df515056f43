"""tuned.results' listing of a tuning database, without a GPU: it reads real databases through
libtuned (one made by the library itself, with rows added by sqlite3), and never changes a byte
of them. Run: TUNED_LIBRARY=.../libtuned.so python3 -m unittest discover -s python/tests"""
import contextlib
import hashlib
import json
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

PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if os.environ.get("TUNED_TEST_INSTALLED") != "1":  # else the installed package is tested
    sys.path.insert(0, PACKAGE_ROOT)
import tuned  # noqa: E402

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
