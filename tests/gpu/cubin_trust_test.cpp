// A cubin is code the library runs, and its checksum proves no origin: a planted cubin (a kernel
// of the right name that computes nothing) under the key the runtime looks up is never loaded from
// a database that group or others can write; tuned_gemm compiles the stored config instead and
// gives the right product. The control: the same plant in a database only this user can write IS
// loaded (the product is wrong, the log says the kernel came from the database), so the test can
// fail.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "core/cuda_check.hpp"
#include "core/log.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "generator/nvrtc_compiler.hpp"
#include "generator/precompiled.hpp"
#include "gpu_test_util.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/registry.hpp"
#include "tuned/tuned.h"

namespace tuned {
namespace {

namespace fs = std::filesystem;

constexpr int kM = 100, kN = 96, kK = 64;  // column-major NN, every leading dimension packed

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A config the runtime will serve for the problem as an exact best, and the cubin key it looks
// up for it: one of the op's space that fit leaves as it is, needing no workspace, with no
// precompiled image (else the library would never ask the database).
struct Planted {
  std::string config;
  KernelSpec spec;
  CubinKey key;
};

std::vector<Planted> plantable(const DeviceInfo& device, size_t count) {
  const OpRegistration& gemm = find_op("gemm");
  const auto problem = gemm_op::packed_problem("NN", kM, kN, kK);
  const ProblemId id = gemm_op::problem_id(problem);
  TaskRequest request;
  request.op = "gemm";
  request.shape = {kM, kN, kK};
  request.layout = "NN";
  std::vector<Planted> found;
  size_t visited = 0;  // the first configs of the space serve; never a walk of all of it
  request_space(request, device).for_each([&](const Config& config) {
    try {
      if (!(gemm.face->fit(config, device, id) == config)) return true;
      if (gemm.face->workspace_bytes(config, id) != 0) return true;
      KernelSpec spec = gemm.face->kernel_spec(config, id);
      const CubinKey key = cubin_key(spec, device);
      if (find_precompiled(key, spec.kernel_name)) return true;
      for (const auto& p : found) {
        if (p.spec.kernel_name == spec.kernel_name) return true;
      }
      found.push_back({config.canonical(), std::move(spec), key});
    } catch (const Error&) {
    }
    return found.size() < count && ++visited < 10000;
  });
  return found;
}

// An image holding kernels of the expected names (the config's, and its companions', which the
// loader looks up too) that write nothing.
CubinRecord wrong_kernel(const Planted& plant, const DeviceInfo& device) {
  std::string source;
  for (const std::string& name : plant.spec.companions) {
    source += "extern \"C\" __global__ void " + name + "() {}\n";
  }
  source += "extern \"C\" __global__ void " + plant.spec.kernel_name + "() {}\n";
  CompileRequest request;
  request.source_name = "planted.cu";
  request.source = source;
  request.kernel_name = plant.spec.kernel_name;
  request.compute_capability = device.compute_capability();
  request.arch_specific = plant.spec.arch_specific;
  CompiledKernel compiled = compile_kernel(request);
  CubinRecord cubin;
  cubin.image = std::move(compiled.image);
  cubin.kernel_name = plant.spec.kernel_name;
  cubin.log = "planted by cubin_trust_test";
  return cubin;
}

class CubinTrustGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNED_REQUIRE_GPU();
    device_ = query_device(0);
    TUNED_CUDA_CHECK(cudaSetDevice(0));
    dir_ = ::testing::TempDir() + "cubin_trust_" + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms(0700));
    log_path_ = dir_ + "/log.txt";
    set_log_file(log_path_);
    set_log_level(LogLevel::kInfo);
  }
  void TearDown() override {
    set_log_level(LogLevel::kOff);
    set_log_file("");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A database whose exact best for the problem is plant.config, with the wrong kernel stored as
  // its cubin, at mode.
  std::string plant_database(const std::string& name, const Planted& plant, fs::perms mode) {
    const std::string path = dir_ + "/" + name;
    {
      cache::Database db(path);
      db.upsert_device(cache::device_record(device_));
      cache::BestRecord best;
      best.key = gemm_op::problem_key(device_, gemm_op::packed_problem("NN", kM, kN, kK));
      best.config = plant.config;
      best.kernel_name = plant.spec.kernel_name;
      best.ms = 1;
      best.template_hash = plant.spec.source_hash;
      EXPECT_TRUE(db.offer_best(best));
      db.put_cubin(plant.key, wrong_kernel(plant, device_));
      EXPECT_TRUE(db.find_cubin(plant.key).has_value());
    }
    fs::permissions(path, mode);
    return path;
  }

  // tuned_gemm on fresh random inputs, C poisoned with NaN (beta 0): the largest relative error
  // against a double-precision product (NaN where an element was not written).
  double gemm_error() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> a(kM * kK), b(kK * kN), c(kM * kN, NAN);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    float *da, *db, *dc;
    TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&da), a.size() * 4));
    TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&db), b.size() * 4));
    TUNED_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dc), c.size() * 4));
    TUNED_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    TUNED_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    TUNED_CUDA_CHECK(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice));
    const float alpha = 1.0f, beta = 0.0f;
    const tuned_status_t status = tuned_gemm(TUNED_OP_N, TUNED_OP_N, kM, kN, kK, &alpha, da, kM, db,
                                             kK, &beta, dc, kM, nullptr);
    EXPECT_EQ(status, TUNED_STATUS_SUCCESS) << tuned_last_error();
    TUNED_CUDA_CHECK(cudaDeviceSynchronize());
    TUNED_CUDA_CHECK(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost));
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    double worst = 0;
    for (int j = 0; j < kN; ++j) {
      for (int i = 0; i < kM; ++i) {
        double ref = 0, scale = 0;
        for (int p = 0; p < kK; ++p) {
          ref += double(a[i + p * kM]) * b[p + j * kK];
          scale += std::fabs(double(a[i + p * kM]) * b[p + j * kK]);
        }
        const double got = c[i + j * kM];
        if (!std::isfinite(got)) return NAN;
        worst = std::max(worst, std::fabs(got - ref) / std::max(scale, 1e-30));
      }
    }
    return worst;
  }

  DeviceInfo device_;
  std::string dir_, log_path_;
};

TEST_F(CubinTrustGpu, PlantedCubinIsLoadedOnlyFromADatabaseOthersCannotWrite) {
  // Two configs, so the two databases' kernels are two entries of the process's loaded kernels.
  const auto plants = plantable(device_, 2);
  ASSERT_EQ(plants.size(), 2u) << "no two configs without a precompiled kernel for this problem";

  // Group-writable: the plant is not loaded; the stored config is compiled here and is right.
  const std::string shared = plant_database("shared.db", plants[0], fs::perms(0660));
  ASSERT_EQ(tuned_set_database(shared.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  const double shared_error = gemm_error();
  EXPECT_TRUE(std::isfinite(shared_error)) << "the planted (empty) kernel ran";
  EXPECT_LE(shared_error, 1e-5);
  std::string log = slurp(log_path_);
  EXPECT_NE(log.find("no cubin is loaded from it"), std::string::npos) << log;
  EXPECT_NE(log.find("writable by its group (mode 0660)"), std::string::npos) << log;
  EXPECT_NE(log.find("exact " + plants[0].config + "; kernel compiled"), std::string::npos) << log;

  // The control: the same kind of plant where only this user can write is loaded, and computes
  // nothing (C keeps its NaN), so the check above can fail.
  const std::string private_db = plant_database("private.db", plants[1], fs::perms(0600));
  ASSERT_EQ(tuned_set_database(private_db.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  const double private_error = gemm_error();
  EXPECT_FALSE(private_error <= 1e-5)
      << "the planted kernel was not loaded (error " << private_error << ")";
  log = slurp(log_path_);
  EXPECT_NE(log.find("exact " + plants[1].config + "; kernel from the database"), std::string::npos)
      << log;

  // Back to an empty database for the tests after this one.
  ASSERT_EQ(tuned_set_database((dir_ + "/empty.db").c_str()), TUNED_STATUS_SUCCESS);
}

}  // namespace
}  // namespace tuned
