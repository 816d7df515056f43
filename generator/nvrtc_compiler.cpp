#include "generator/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <regex>

#include "core/cuda_check.hpp"

namespace tuned {
namespace {

class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    TUNED_NVRTC_CHECK(nvrtcCreateProgram(&prog_, source.c_str(), name.c_str(), 0, nullptr, nullptr),
                      "");
  }
  ~Program() { (void)nvrtcDestroyProgram(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return prog_; }

  std::string log() const {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog_, &size) != NVRTC_SUCCESS || size <= 1) return "";
    std::string text(size, '\0');
    if (nvrtcGetProgramLog(prog_, text.data()) != NVRTC_SUCCESS) return "";
    text.resize(size - 1);
    return text;
  }

 private:
  nvrtcProgram prog_ = nullptr;
};

std::vector<int> supported_archs() {
  int count = 0;
  TUNED_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count), "");
  std::vector<int> archs(count);
  TUNED_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()), "");
  std::sort(archs.begin(), archs.end());
  return archs;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  TUNED_NVRTC_CHECK(nvrtcVersion(&major, &minor), "");
  return std::to_string(major) + "." + std::to_string(minor);
}

int nvrtc_min_compute_capability() {
  static const int cc = supported_archs().front();
  return cc;
}
int nvrtc_max_compute_capability() {
  static const int cc = supported_archs().back();
  return cc;
}

std::string nvrtc_target(int compute_capability, bool arch_specific) {
  static const std::vector<int> archs = supported_archs();
  if (std::binary_search(archs.begin(), archs.end(), compute_capability)) {
    return "sm_" + std::to_string(compute_capability) + (arch_specific ? "a" : "");
  }
  if (arch_specific) {
    throw Error(TUNED_STATUS_UNSUPPORTED_ARCH,
                "NVRTC " + nvrtc_version() +
                    " has no architecture-specific target for compute capability " +
                    std::to_string(compute_capability));
  }
  // A newer GPU than this NVRTC knows: PTX for the newest known architecture, which the driver
  // compiles for the device at load time.
  return "compute_" + std::to_string(archs.back());
}

const std::vector<std::string>& base_compile_options() {
  // No fast-math: results are checked against cuBLAS in full FP32. -Xptxas=-v makes the
  // resource report part of the log.
  static const std::vector<std::string> options = {"-std=c++17", "-default-device",
                                                   "-Xptxas=-v", "-lineinfo"};
  return options;
}

ResourceReport parse_ptxas_report(const std::string& log, const std::string& kernel_name) {
  ResourceReport report;
  // The report of one entry point starts at its "Compiling entry function" line and runs until
  // the next one.
  const std::string marker = "Compiling entry function '" + kernel_name + "'";
  size_t begin = log.find(marker);
  if (begin == std::string::npos) begin = 0;
  size_t end = log.find("Compiling entry function", begin + marker.size());
  const std::string section = log.substr(begin, end == std::string::npos ? end : end - begin);
  std::smatch m;
  if (std::regex_search(section, m, std::regex(R"((\d+) bytes stack frame)"))) {
    report.stack_bytes = std::stoi(m[1]);
  }
  if (std::regex_search(section, m, std::regex(R"((\d+) bytes spill stores)"))) {
    report.spill_store_bytes = std::stoi(m[1]);
  }
  if (std::regex_search(section, m, std::regex(R"((\d+) bytes spill loads)"))) {
    report.spill_load_bytes = std::stoi(m[1]);
  }
  if (std::regex_search(section, m, std::regex(R"(Used (\d+) registers)"))) {
    report.registers = std::stoi(m[1]);
  }
  if (std::regex_search(section, m, std::regex(R"((\d+) bytes smem)"))) {
    report.static_smem_bytes = std::stoi(m[1]);
  }
  return report;
}

CompiledKernel compile_kernel(const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const std::string source(request.source);  // NVRTC wants a NUL-terminated string
  Program program(source, request.source_name);

  const std::string target = nvrtc_target(request.compute_capability, request.arch_specific);
  std::vector<std::string> options = base_compile_options();
  options.push_back("--gpu-architecture=" + target);
  options.insert(options.end(), request.options.begin(), request.options.end());
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());

  const nvrtcResult result =
      nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  CompiledKernel out;
  out.kernel_name = request.kernel_name;
  out.log = program.log();
  if (result != NVRTC_SUCCESS) {
    std::string joined;
    for (const auto& o : request.options) joined += " " + o;
    throw Error(result == NVRTC_ERROR_COMPILATION ? TUNED_STATUS_COMPILE_ERROR
                                                  : TUNED_STATUS_INTERNAL_ERROR,
                "NVRTC could not compile " + request.kernel_name + " from " + request.source_name +
                    " for " + target + " (" + nvrtcGetErrorString(result) + "); options:" + joined +
                    "\n" + out.log);
  }
  size_t size = 0;
  if (target.rfind("sm_", 0) == 0) {
    TUNED_NVRTC_CHECK(nvrtcGetCUBINSize(program.get(), &size), out.log);
    out.image.resize(size);
    TUNED_NVRTC_CHECK(nvrtcGetCUBIN(program.get(), out.image.data()), out.log);
  } else {
    TUNED_NVRTC_CHECK(nvrtcGetPTXSize(program.get(), &size), out.log);
    out.image.resize(size);
    TUNED_NVRTC_CHECK(nvrtcGetPTX(program.get(), out.image.data()), out.log);
  }
  out.resources = parse_ptxas_report(out.log, request.kernel_name);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tuned
