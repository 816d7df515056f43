// Kernels compiled ahead of time and built into the library (tools/precompile runs NVRTC at build
// time, without a GPU, for the selection model's portfolio on the shipped GPU models'
// architectures), so a new process's first call of a new shape loads a module instead of
// compiling one. Each image is one zstd frame, compressed with a dictionary trained on all of
// them (uncompressed they made every binary over 200 MB); it is decompressed when it is looked up,
// and the kernel cache above keeps what it loads.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/cubin.hpp"

struct ZSTD_DDict_s;  // zstd.h's ZSTD_DDict, kept out of the users of this header

namespace tuned {

/// One built-in kernel image: the fields of its cubin key that describe the machine code (the
/// NVRTC version it was built with does not matter to the driver) and where its bytes are.
struct PrecompiledEntry {
  const char* source_hash;
  const char* options;
  const char* arch;
  const char* kernel_name;
  size_t offset, compressed_size;  // its zstd frame in the blob
  size_t size;                     // of the image
  int registers;
};

/// The built-in cubin of this key and kernel, if the library has one (and it is intact).
std::optional<CubinRecord> find_precompiled(const CubinKey& key, const std::string& kernel_name);
/// Number of built-in cubins.
size_t precompiled_count();

namespace detail {

struct PrecompiledTable {
  const PrecompiledEntry* entries;
  size_t count;
  const unsigned char* blob;
  size_t blob_size;
  size_t dictionary_size;  // the zstd dictionary at the start of the blob (0: none)
};
PrecompiledTable precompiled_table();  // generated at build time (empty in the precompiler)

/// A table's images, decompressed on request. Thread-safe.
class PrecompiledImages {
 public:
  explicit PrecompiledImages(const PrecompiledTable& table);
  ~PrecompiledImages();
  PrecompiledImages(const PrecompiledImages&) = delete;
  PrecompiledImages& operator=(const PrecompiledImages&) = delete;

  const PrecompiledTable& table() const { return table_; }
  /// Entry index's image: decompressed, its content checksum verified, of the size the table
  /// records, an ELF file for a CUDA GPU. Throws Error (TUNED_STATUS_LAUNCH_ERROR) naming the
  /// entry and what is wrong where any of that fails.
  std::vector<char> image(size_t index) const;
  /// The cubin of this key and kernel; nullopt where there is none, or where its image is damaged
  /// (logged once as an error: the kernel is then compiled by NVRTC like any other).
  std::optional<CubinRecord> find(const CubinKey& key, const std::string& kernel_name) const;

 private:
  PrecompiledTable table_;
  ZSTD_DDict_s* dictionary_ = nullptr;  // null where the table has none or it does not parse
};

}  // namespace detail

}  // namespace tuned
