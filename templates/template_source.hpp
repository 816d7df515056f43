// Kernel template sources by file name, embedded at build time, with the hash that keys cubins.
#pragma once

#include <string>
#include <vector>

#include "generator/kernel_cache.hpp"

namespace tuned {

struct TemplateSource {
  std::string name;  // "gemm.cu"
  std::string text;  // with its includes expanded
  std::string hash;  // 16 hex digits of FNV-1a 64 over text
};

/// The template called name, with the files it includes with quotes (`#include "gemm_mma.cuh"`,
/// other embedded files, found by name) expanded in place, each once: the text NVRTC compiles and
/// its hash, so a change to any file of the closure keys new cubins and bests. When
/// TUNED_TEMPLATE_DIR is set, files are read from there (and subfolders) first, so kernel edits
/// need no rebuild during development. Throws Error(TUNED_STATUS_INTERNAL_ERROR) for an unknown
/// name or an include of a file that is not embedded.
const TemplateSource& template_source(const std::string& name);

/// A spec compiling kernel_name from the template called template_name (no options yet).
KernelSpec template_kernel_spec(const std::string& template_name, const std::string& kernel_name);

/// FNV-1a 64 of text as 16 hex digits.
std::string fnv1a_hex(const std::string& text);

namespace detail {
struct EmbeddedTemplate {
  const char* name;
  const char* data;
  unsigned long size;
};
const std::vector<EmbeddedTemplate>& embedded_templates();  // generated
}  // namespace detail

}  // namespace tuned
