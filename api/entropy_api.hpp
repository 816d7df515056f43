// The entropy op's API entries. On device memory: validate the arguments and the values (on the
// device, before anything is written), name the problem for the runtime and hand it a launcher.
// From host memory to host memory: the CPU path (OpenMP) below the measured threshold or without a
// GPU; else the columns split over the GPUs with halos, each GPU's band on its own host thread:
// its values packed to bytes in pinned memory chunk by chunk (validated on the way: no output is
// written before every band's values passed) and uploaded, then pipelined in chunks (kernel,
// download into pinned buffers, copy out) on three streams.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cache/records.hpp"
#include "templates/entropy/entropy_op.hpp"
#include "tuned/tuned.hpp"

namespace tuned::api {

/// in and out in device memory of the current GPU.
void entropy(const entropy_op::Problem& problem, entropy_op::Input input, const void* in,
             float* out, cudaStream_t stream);
std::string describe_entropy(const entropy_op::Problem& problem, entropy_op::Input input);

/// in and out in host memory (pageable or not).
void entropy_host(const entropy_op::Problem& problem, entropy_op::Input input, const void* in,
                  float* out, const EntropyOptions& options, EntropyReport* report);

/// Copies count floats; with streaming, through non-temporal stores where the CPU has them (the
/// host path's copy out of large outputs: written once, never read first). For the tests too.
void copy_floats(float* dst, const float* src, size_t count, bool streaming);

/// Problems of fewer elements than this run on the CPU on the auto path: cpu_threshold of the
/// user's database's entropy records of GPU 0, read once per process and window.
int64_t entropy_cpu_threshold(const entropy_op::Problem& problem, entropy_op::Input input);

/// The threshold `autotune --op entropy` measured: among best records of this input type,
/// radius and levels, each size's kernel time plus the host path's copies (kHostPathFixedMs +
/// 5 bytes per element at kHostBytesPerMs) against the CPU path's time (the record's
/// baseline_ms); the threshold lies between the largest size the CPU wins and the next size
/// (geometric mean). kDefaultCpuThreshold without records.
constexpr double kHostPathFixedMs = 0.1;
constexpr double kHostBytesPerMs = 25e6;  // 25 GB/s
constexpr int64_t kDefaultCpuThreshold = int64_t{256} * 256;
int64_t cpu_threshold(const std::vector<cache::BestRecord>& records,
                      const entropy_op::Problem& problem, entropy_op::Input input);

}  // namespace tuned::api
