// Kernels compiled ahead of time and built into the library (tools/precompile runs NVRTC at build
// time, without a GPU, for the selection model's portfolio on the shipped GPU models'
// architectures), so a new process's first call of a new shape loads a module instead of
// compiling one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/cubin.hpp"

namespace tuned {

/// One built-in kernel image: the fields of its cubin key that describe the machine code (the
/// NVRTC version it was built with does not matter to the driver) and where its bytes are.
struct PrecompiledEntry {
  const char* source_hash;
  const char* options;
  const char* arch;
  const char* kernel_name;
  size_t offset, size;  // in the blob
  int registers;
};

/// The built-in cubin of this key and kernel, if the library has one.
std::optional<CubinRecord> find_precompiled(const CubinKey& key, const std::string& kernel_name);
/// Number of built-in cubins.
size_t precompiled_count();

namespace detail {
struct PrecompiledTable {
  const PrecompiledEntry* entries;
  size_t count;
  const unsigned char* blob;
};
PrecompiledTable precompiled_table();  // generated at build time (empty in the precompiler)
}  // namespace detail

}  // namespace tuned
