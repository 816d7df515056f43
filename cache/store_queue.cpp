#include "cache/store_queue.hpp"

#include <random>

#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using store::Connection;
using store::Params;
using store::Row;

const char* kTaskColumns =
    "id, op, variant, shape, alignment, device_model, seed, strategy, budget_s, max_trials, "
    "patience, remeasure, attempts";

ClaimedTask claimed_of(const Row& r, const std::string& token) {
  ClaimedTask c;
  c.id = r.int64(0);
  QueuedTask& t = c.task;
  t.op = r.text(1);
  t.variant = r.text(2);
  const auto shape = parse_shape_string(r.text(3));
  if (!shape) throw Error(TUNED_STATUS_DATABASE_ERROR, "store: task shape '" + r.text(3) + "'");
  t.shape = *shape;
  t.alignment = static_cast<int>(r.int64(4));
  t.device_model = r.text(5);
  t.seed = static_cast<uint64_t>(r.int64(6));
  t.strategy = r.text(7);
  t.budget_s = r.real(8);
  t.max_trials = static_cast<int>(r.int64(9));
  t.patience = static_cast<int>(r.int64(10));
  t.remeasure = r.text(11) == "t";
  c.attempts = static_cast<int>(r.int64(12));
  c.token = token;
  return c;
}

// A claim's token: who claimed, and 64 random bits (a claim retried after a lost COMMIT finds its
// own task by it).
std::string new_token(const Claimant& who) {
  static thread_local std::mt19937_64 random(std::random_device{}());
  char bits[17];
  std::snprintf(bits, sizeof bits, "%016llx", static_cast<unsigned long long>(random()));
  return who.node + ":" + std::to_string(who.pid) + ":" + std::to_string(who.gpu) + ":" + bits;
}

std::string interval(std::chrono::seconds s) { return std::to_string(s.count()) + " seconds"; }

}  // namespace

std::pair<int64_t, int64_t> StoreQueue::enqueue(const std::vector<QueuedTask>& tasks) {
  std::pair<int64_t, int64_t> counts;
  store_.connection().transaction(
      [&](Connection& c) {
        counts = {0, 0};
        for (const QueuedTask& t : tasks) {
          Params p;
          p.add(t.op).add(t.variant).add(shape_string(t.shape)).add(t.alignment);
          p.add(t.device_model).add(static_cast<int64_t>(t.seed)).add(t.strategy).add(t.budget_s);
          p.add(t.max_trials).add(t.patience).add(t.remeasure);
          const auto r = c.exec(
              "INSERT INTO tuned.tasks (op, variant, shape, alignment, device_model, seed, "
              "strategy, budget_s, max_trials, patience, remeasure, state) VALUES ($1, $2, $3, "
              "$4, $5, $6, $7, $8, $9, $10, $11, 'queued') ON CONFLICT DO NOTHING",
              p, "enqueue");
          (r.changed > 0 ? counts.first : counts.second)++;
        }
      },
      "enqueue");
  return counts;
}

std::optional<ClaimedTask> StoreQueue::claim(const Claimant& who, std::chrono::seconds lease,
                                             int max_attempts) {
  const std::string token = new_token(who);
  std::optional<ClaimedTask> claimed;
  store_.connection().transaction(
      [&](Connection& c) {
        claimed.reset();
        // A COMMIT lost in transit: the task is ours already.
        auto mine = c.exec(std::string("SELECT ") + kTaskColumns +
                               " FROM tuned.tasks WHERE token = $1 AND state = 'running'",
                           Params().add(token), "claim");
        if (!mine.rows.empty()) {
          claimed = claimed_of(mine.rows[0], token);
          return;
        }
        // Tasks whose workers died too often end as failed rather than kill the next one.
        c.exec(
            "WITH gone AS (UPDATE tuned.tasks SET state = 'failed', ended_at = now(), note = "
            "'claimed ' || attempts || ' times, every worker stopped renewing its lease' WHERE "
            "state = 'running' AND lease_until < now() AND attempts >= $1 RETURNING token) "
            "UPDATE tuned.task_claims SET result = 'expired', ended_at = now() WHERE token IN "
            "(SELECT token FROM gone)",
            Params().add(max_attempts), "claim");
        auto r = c.exec(
            "SELECT id, token, state FROM tuned.tasks WHERE (state = 'queued' OR (state = "
            "'running' AND lease_until < now())) AND (device_model = '' OR device_model = $1) "
            "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
            Params().add(who.gpu_name), "claim");
        if (r.rows.empty()) return;
        const int64_t id = r.rows[0].int64(0);
        if (r.rows[0].text(2) == "running") {  // taken over from a worker that stopped renewing
          c.exec("UPDATE tuned.task_claims SET result = 'expired', ended_at = now() WHERE token "
                 "= $1 AND result IS NULL",
                 Params().add(r.rows[0].text(1)), "claim");
        }
        Params p;
        p.add(id).add(token).add(who.node).add(who.pid).add(who.gpu).add(who.gpu_name);
        p.add(interval(lease));
        auto t = c.exec(std::string("UPDATE tuned.tasks SET state = 'running', token = $2, node = "
                                    "$3, pid = $4, gpu = $5, gpu_name = $6, attempts = attempts + "
                                    "1, claimed_at = now(), lease_until = now() + $7::interval, "
                                    "ended_at = NULL WHERE id = $1 RETURNING ") +
                            kTaskColumns,
                        p, "claim");
        Params q;
        q.add(id).add(token).add(who.node).add(who.pid).add(who.gpu).add(who.gpu_name);
        c.exec("INSERT INTO tuned.task_claims (task_id, token, node, pid, gpu, gpu_name) VALUES "
               "($1, $2, $3, $4, $5, $6)",
               q, "claim");
        claimed = claimed_of(t.rows.at(0), token);
      },
      "claim a task");
  return claimed;
}

bool StoreQueue::renew(const ClaimedTask& claim, std::chrono::seconds lease) {
  const auto r = store_.connection().retried(
      "UPDATE tuned.tasks SET lease_until = now() + $3::interval WHERE id = $1 AND token = $2 AND "
      "state = 'running'",
      Params().add(claim.id).add(claim.token).add(interval(lease)), "renew a lease");
  return r.changed > 0;
}

bool StoreQueue::finish(const ClaimedTask& claim, bool done, const std::string& note) {
  bool ended = false;
  const std::string state = done ? "done" : "failed";
  store_.connection().transaction(
      [&](Connection& c) {
        Params p;
        p.add(claim.id).add(claim.token).add(state).add(note);
        const auto r = c.exec(
            "UPDATE tuned.tasks SET state = $3, ended_at = now(), note = $4 WHERE id = $1 AND "
            "token = $2 AND state = 'running'",
            p, "finish a task");
        if (r.changed > 0) {
          c.exec("UPDATE tuned.task_claims SET result = $2, ended_at = now() WHERE token = $1",
                 Params().add(claim.token).add(state), "finish a task");
          ended = true;
          return;
        }
        // Ended already by this claim (its COMMIT lost in transit), or no longer ours.
        const auto again = c.exec("SELECT 1 FROM tuned.tasks WHERE id = $1 AND token = $2 AND "
                                  "state = $3",
                                  Params().add(claim.id).add(claim.token).add(state),
                                  "finish a task");
        ended = !again.rows.empty();
      },
      "finish a task");
  return ended;
}

bool StoreQueue::release(const ClaimedTask& claim, const std::string& note) {
  bool released = false;
  store_.connection().transaction(
      [&](Connection& c) {
        const auto r = c.exec(
            "UPDATE tuned.tasks SET state = 'queued', lease_until = NULL, note = $3 WHERE id = "
            "$1 AND token = $2 AND state = 'running'",
            Params().add(claim.id).add(claim.token).add(note), "release a task");
        released = r.changed > 0;
        if (released) {
          c.exec("UPDATE tuned.task_claims SET result = 'released', ended_at = now() WHERE token "
                 "= $1",
                 Params().add(claim.token), "release a task");
        }
      },
      "release a task");
  return released;
}

QueueCounts StoreQueue::counts() {
  QueueCounts counts;
  const auto r = store_.connection().retried(
      "SELECT state, count(*) FROM tuned.tasks GROUP BY state", {}, "count tasks");
  for (const Row& row : r.rows) {
    const std::string& state = row.text(0);
    const int64_t n = row.int64(1);
    if (state == "queued") counts.queued = n;
    if (state == "running") counts.running = n;
    if (state == "done") counts.done = n;
    if (state == "failed") counts.failed = n;
  }
  return counts;
}

bool StoreQueue::unfinished() {
  const QueueCounts c = counts();
  return c.queued + c.running > 0;
}

std::vector<TaskState> StoreQueue::tasks(const std::string& state) {
  std::vector<TaskState> out;
  const std::string where = state.empty() ? "" : " WHERE state = $1";
  Params p;
  if (!state.empty()) p.add(state);
  const auto r = store_.connection().retried(
      "SELECT id, op, variant, shape, alignment, device_model, state, node, gpu, gpu_name, "
      "attempts, extract(epoch FROM (CASE WHEN state = 'running' THEN now() ELSE "
      "coalesce(ended_at, now()) END) - coalesce(claimed_at, now())), coalesce(state = "
      "'running' AND lease_until < now(), false), note FROM tuned.tasks" +
          where + " ORDER BY id",
      p, "list tasks");
  for (const Row& row : r.rows) {
    TaskState t;
    t.id = row.int64(0);
    t.op = row.text(1);
    t.variant = row.text(2);
    t.shape = row.text(3);
    t.alignment = static_cast<int>(row.int64(4));
    t.device_model = row.text(5);
    t.state = row.text(6);
    t.node = row.text(7);
    t.gpu = static_cast<int>(row.int64(8));
    t.gpu_name = row.text(9);
    t.attempts = static_cast<int>(row.int64(10));
    t.elapsed_s = row.real(11);
    t.lease_expired = row.text(12) == "t";
    t.note = row.text(13);
    out.push_back(std::move(t));
  }
  return out;
}

int64_t StoreQueue::done_claims(int64_t id) {
  const auto r = store_.connection().retried(
      "SELECT count(*) FROM tuned.task_claims WHERE task_id = $1 AND result = 'done'",
      Params().add(id), "count claims");
  return r.rows.at(0).int64(0);
}

}  // namespace tuned::cache
