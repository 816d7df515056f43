#!/usr/bin/env python3
"""The tuning queue under fire (issue 66), with no GPU: a throwaway PostgreSQL cluster, 200 tasks
enqueued, 8 `autotune --worker` processes on recorded spaces standing in for GPUs (--replay, each
trial taking wall time), workers killed with SIGKILL at random and replaced, and the store
restarted in the middle. Then:
  - every task is done, by exactly one claim;
  - no trial is stored twice, and the store holds exactly the trials a single-process replay run of
    the same tasks measures (the killed workers' tasks were resumed, not started over);
  - the store's bests equal that run's;
  - `tunedb pull` into an empty database gives the same bests as that run's database;
  - two pushes of that run's database: the second adds nothing.

  fleet_kill_test.py BUILD_DIR SOURCE_DIR
Needs Debian's postgresql (initdb, pg_ctl, psql); without it the test skips (exit 77) unless
TUNED_REQUIRE_STORE=1, which makes that a failure.
"""
import csv
import gzip
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TASKS = 200
WORKERS = 8
KILLS = 12
MAX_TRIALS = 24
PACE_MS = 25
LEASE_S = 4
SEED = 11


def say(*args):
    print("fleet:", *args, flush=True)


def read_record(path):
    """The header lines and trial lines of a recorded space."""
    with gzip.open(path, "rt") as f:
        lines = [line.rstrip("\n") for line in f if not line.startswith("#")]
    header = [l for l in lines if not l.startswith(("trial\t", "first\t"))]
    first = [l for l in lines if l.startswith("first\t")]
    trials = [l for l in lines if l.startswith("trial\t")]
    return header, first, trials


def write_variant(path, header, first, trials, shape, rng, keep):
    """The record on another shape: a random subset of its configs, times scaled per config."""
    chosen = rng.sample(trials, min(keep, len(trials)))
    out = ["# fleet test: a recorded space moved to another shape"]
    for line in header:
        name = line.split("\t", 1)[0]
        out.append(f"shape\t{shape}" if name == "shape" else line)
    out += first
    for line in chosen:
        f = line.split("\t")
        if f[1] == "ok":
            f[2] = repr(float(f[2]) * rng.uniform(0.5, 2.0))
        out.append("\t".join(f))
    with gzip.open(path, "wt") as g:
        g.write("\n".join(out) + "\n")


def make_tasks(source, folder, shapes_file):
    """TASKS problems: transposes and GEMMs (TN) of odd shapes, each with its recorded space."""
    rng = random.Random(SEED)
    transpose = read_record(os.path.join(source, "bench/replay/transpose_4096x4096_h100.tsv.gz"))
    gemm = read_record(os.path.join(source, "bench/replay/gemm_TN_1000x600x1200_h200.tsv.gz"))
    # One GPU model for all: the records' device name is taken from the first (in name order).
    gemm = ([l.replace("NVIDIA H200", "NVIDIA H100 80GB HBM3") for l in gemm[0]], gemm[1], gemm[2])
    lines, seen = [], set()
    while len(lines) < TASKS:
        if len(lines) % 4 == 3:
            m = rng.choice([1, 7, 127, 1000, 999, 1001, 1023, 1025]) + rng.randrange(0, 400)
            shape = f"{m}x600x1200"
            op, variant, record = "gemm", "TN", gemm
        else:
            shape = f"{rng.randrange(1, 4098)}x{rng.randrange(1, 4098)}"
            op, variant, record = "transpose", "T", transpose
        if (op, shape) in seen:
            continue
        seen.add((op, shape))
        path = os.path.join(folder, f"{op}_{variant}_{shape}.tsv.gz")
        write_variant(path, record[0], record[1], record[2], shape, rng, 60)
        lines.append(f"{op} {variant} {shape} align 4")
    with open(shapes_file, "w") as f:
        f.write("\n".join(lines) + "\n")


class Fleet:
    def __init__(self, build, source, work):
        self.autotune = os.path.join(build, "tools/autotune")
        self.tunedb = os.path.join(build, "tools/tunedb")
        self.cluster = os.path.join(source, "scripts/pg_test_cluster.sh")
        self.work = work
        self.pg = os.path.join(work, "pg")
        self.env = dict(os.environ, TUNED_LOCK_DIR=work, TUNED_LOG_LEVEL="warn")
        self.workers = {}  # pid -> (Popen, log path)
        self.started = 0

    def start_store(self):
        port = str(54400 + os.getpid() % 500)
        out = subprocess.run([self.cluster, "start", self.pg, port], check=True,
                             capture_output=True, text=True).stdout.strip()
        self.url = out.splitlines()[-1]

    def restart_store(self):
        subprocess.run([self.cluster, "restart", self.pg], check=True)

    def stop_store(self):
        subprocess.run([self.cluster, "stop", self.pg])

    def sql(self, query):
        out = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", self.url,
                              "-c", query], check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def run(self, *args, check=True):
        r = subprocess.run(list(args), env=self.env, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise SystemExit(f"fleet: {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def start_worker(self, replay):
        n = self.started
        self.started += 1
        log = os.path.join(self.work, f"worker{n}.log")
        p = subprocess.Popen(
            [self.autotune, "--worker", "--store", self.url, "--replay", replay,
             "--replay-pace", str(PACE_MS), "--lease", str(LEASE_S), "--node", f"node{n % 4}",
             "--db", os.path.join(self.work, f"worker{n}.db")],
            env=self.env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.workers[p.pid] = (p, log)


def bests_of_db(fleet, db):
    out = fleet.run(fleet.tunedb, "best", "--db", db, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return {(r["op"], r["variant"], r["shape"], r["alignment"]): (r["config"], float(r["ms"]))
            for r in rows}


def main():
    build, source = sys.argv[1], sys.argv[2]
    required = os.environ.get("TUNED_REQUIRE_STORE") == "1"
    if not shutil.which("psql") or not any(os.path.exists(f"/usr/lib/postgresql/{v}/bin/pg_ctl")
                                            for v in os.listdir("/usr/lib/postgresql")
                                            if os.path.isdir("/usr/lib/postgresql")):
        print("fleet test skipped: no PostgreSQL server here (Debian's postgresql)")
        return 1 if required else 77
    work = tempfile.mkdtemp(prefix="tuned-fleet-")
    os.chmod(work, 0o755)  # the cluster's owner (postgres, where this runs as root) enters it
    fleet = Fleet(build, source, work)
    failures = []

    def check(ok, what):
        say(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    try:
        replay = os.path.join(work, "spaces")
        os.mkdir(replay)
        shapes = os.path.join(work, "shapes.txt")
        make_tasks(source, replay, shapes)
        fleet.start_store()
        say("store", fleet.url)
        common = ["--shapes-from", shapes, "--max-trials", str(MAX_TRIALS), "--seed", str(SEED),
                  "--budget", str(TASKS * 3600)]
        r = fleet.run(fleet.autotune, "--enqueue", "--store", fleet.url, *common)
        say(r.stdout.strip())
        again = fleet.run(fleet.autotune, "--enqueue", "--store", fleet.url, *common)
        check(f"0 task(s) added" in again.stdout, "enqueueing the same problems again adds none")

        start = time.time()
        for _ in range(WORKERS):
            fleet.start_worker(replay)
        rng = random.Random(SEED)
        kills, restarted = 0, False
        while fleet.workers:
            time.sleep(0.5)
            for pid, (p, log) in list(fleet.workers.items()):
                if p.poll() is not None:
                    del fleet.workers[pid]
                    if p.returncode != 0:
                        failures.append(f"worker {pid} exited {p.returncode}: see {log}")
                        say(open(log).read()[-2000:])
            done = int(fleet.sql("SELECT count(*) FROM tuned.tasks WHERE state = 'done'")[0][0])
            if kills < KILLS and fleet.workers and rng.random() < 0.6:
                pid = rng.choice(list(fleet.workers))
                os.kill(pid, signal.SIGKILL)
                fleet.workers[pid][0].wait()
                del fleet.workers[pid]
                kills += 1
                fleet.start_worker(replay)  # a replacement, as a scheduler would start one
            if not restarted and done >= TASKS * 0.4:
                say(f"restarting the store with {done} tasks done")
                fleet.restart_store()
                restarted = True
            if time.time() - start > 600:
                failures.append("the workers did not finish in 600 s")
                break
        took = time.time() - start
        say(f"{fleet.started} workers started, {kills} killed with SIGKILL, store restarted: "
            f"{restarted}, {took:.0f} s")
        status = fleet.run(fleet.autotune, "--status", "--store", fleet.url).stdout
        say(status.splitlines()[0])
        check(restarted and kills == KILLS, f"{KILLS} kills and a store restart happened")

        states = fleet.sql("SELECT state, count(*) FROM tuned.tasks GROUP BY state")
        check(states == [["done", str(TASKS)]], f"every task done: {states}")
        once = fleet.sql("SELECT t.id, count(c.token) FILTER (WHERE c.result = 'done') FROM "
                         "tuned.tasks t LEFT JOIN tuned.task_claims c ON c.task_id = t.id GROUP BY "
                         "t.id HAVING count(c.token) FILTER (WHERE c.result = 'done') <> 1")
        check(not once, f"each task done by exactly one claim ({len(once)} otherwise)")
        resumed = fleet.sql("SELECT count(*) FROM tuned.tasks WHERE attempts > 1")[0][0]
        check(int(resumed) > 0, f"tasks taken over from killed workers: {resumed}")
        twice = fleet.sql("SELECT op, variant, shape, config, count(*) FROM tuned.trials GROUP BY "
                          "op, variant, shape, alignment, template_hash, config HAVING count(*) > 1")
        check(not twice, f"no trial stored twice ({len(twice)} twice)")

        # The same tasks in one process, no store: what the queue must have come to.
        single = os.path.join(work, "single.db")
        fleet.run(fleet.autotune, "--replay", replay, "--db", single, *common)
        store_trials = {tuple(r) for r in fleet.sql(
            "SELECT op, variant, shape, config FROM tuned.trials")}
        out = fleet.run(fleet.tunedb, "trials", "--db", single, "--format", "csv").stdout
        single_trials = {(r["op"], r["variant"], r["shape"], r["config"])
                         for r in csv.DictReader(io.StringIO(out))}
        check(store_trials == single_trials,
              f"the store's trials are the single run's: {len(store_trials)} vs "
              f"{len(single_trials)}, {len(store_trials ^ single_trials)} differ")
        single_bests = bests_of_db(fleet, single)
        store_bests = {(r[0], r[1], r[2], r[3]): (r[4], float(r[5])) for r in fleet.sql(
            "SELECT op, variant, shape, alignment, config, ms FROM tuned.bests")}
        check(store_bests == single_bests,
              f"the store's bests are the single run's ({len(store_bests)} vs {len(single_bests)}, "
              f"{sum(store_bests.get(k) != v for k, v in single_bests.items())} differ)")

        model = fleet.sql("SELECT DISTINCT device_name FROM tuned.bests")
        check(len(model) == 1, f"one GPU model: {model}")
        pulled = os.path.join(work, "pulled.db")
        r = fleet.run(fleet.tunedb, "pull", "--store", fleet.url, "--device-model", model[0][0],
                      "--db", pulled)
        say(r.stdout.strip().replace("\n", " | "))
        pulled_bests = bests_of_db(fleet, pulled)
        check(pulled_bests == single_bests,
              f"tunedb pull into an empty database gives the single run's bests "
              f"({len(pulled_bests)} vs {len(single_bests)})")

        first = fleet.run(fleet.tunedb, "push", "--store", fleet.url, "--db", single).stdout
        second = fleet.run(fleet.tunedb, "push", "--store", fleet.url, "--db", single).stdout
        say(first.strip().replace("\n", " | "))
        check("trials: 0 added" in second and "sessions: 0 added" in second and
              "bests: 0 taken" in second,
              "a second push of the same database adds nothing: " +
              second.strip().replace("\n", " | "))
    finally:
        for p, _ in fleet.workers.values():
            p.kill()
        fleet.stop_store()
        if not failures:
            shutil.rmtree(work, ignore_errors=True)
        else:
            say("kept", work)
    if failures:
        say(f"{len(failures)} check(s) failed")
        return 1
    say("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
