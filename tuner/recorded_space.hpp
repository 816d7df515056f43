// The file of a recorded space (bench/replay/*.tsv.gz): what bench/record_space measured on a GPU
// and bench/tuning_quality replays. gzip-compressed, tab-separated lines:
//   # comment
//   op gemm | variant NN | shape 4096x4096x4096 | alignment 4 | device NAME | cc 90 |
//   template_hash H | baseline_ms X | compile_threads N          (one line each, name then value)
//   first  CONFIG                              (the session's starting configs, in order)
//   trial  DISPOSITION  MS  COMPILE_MS  RUNS  CONFIG           (one per config measured)
// DISPOSITION is the database's (ok, compile_error, wrong_result, ...).
#pragma once

#include <string>
#include <vector>

#include "tuner/replay.hpp"
#include "tuner/replay_evaluator.hpp"

namespace tuned {

/// Reads a recorded space (gzip or plain). Throws Error(TUNED_STATUS_CONFIG_ERROR) naming the
/// file and line of a malformed one, or the file that cannot be read.
RecordedSpace read_recorded_space(const std::string& path);
/// The record's problem space on a reference GPU of its compute capability, narrowed to the
/// recorded configs (Space::restrict_to): what a replay searches. dropped (optional) gets how many
/// recorded configs this build's space no longer has.
Space recorded_problem_space(const RecordedSpace& record, size_t* dropped = nullptr);
/// The fastest ok trial among the configs space holds (a rule added since the recording, such as
/// a bound of the accuracy contract, may refuse the record's best): what a replay on it can find,
/// the space's best that the tuning-quality figures are fractions of.
double recorded_best_ms(const RecordedSpace& record, const Space& space);
/// The record's starting configs, parsed and served as the op serves them on the record's problem
/// today (as a session's starting configs are adapted: GEMM's one chain of slice sums turned into
/// partial chains where the contract's bound has moved since the recording).
std::vector<Config> recorded_first(const RecordedSpace& record);
/// The recorded spaces of files and folders (each *.tsv.gz of a folder, in name order) as problems
/// a replay device serves (ReplayDevice): each searched in its recorded configs, its rate counted
/// in runs per second (a record names no work per run). Throws like read_recorded_space.
std::vector<ReplayedProblem> replayed_problems(const std::vector<std::string>& paths);
/// Writes it gzip-compressed (throws Error(TUNED_STATUS_IO_ERROR) naming the path on failure).
void write_recorded_space(const std::string& path, const RecordedSpace& record);

}  // namespace tuned
