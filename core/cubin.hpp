// Compiled kernel images, their key and the interface of their persistent store: the generator
// builds and loads cubins, cache/ implements the store over SQLite, and neither includes the other
// for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tuned {

/// A cubin is keyed by everything that changes the machine code.
struct CubinKey {
  std::string source_hash;  // hash of the template source text
  std::string options;      // NVRTC options, joined by spaces, in order
  std::string arch;         // "sm_90"
  std::string nvrtc_version;
};

/// A compiled kernel image and what the compiler said about it.
struct CubinRecord {
  std::vector<char> image;
  std::string kernel_name;
  std::string log;
  int registers = 0;
  int spill_bytes = 0;  // spill stores + spill loads, bytes
  int stack_bytes = 0;
  int static_smem_bytes = 0;
  double compile_ms = 0;
};

/// FNV-1a 64 of the image as 16 lowercase hex digits: detects an image damaged at rest.
std::string cubin_checksum(const std::vector<char>& image);

/// FNV-1a 64 (16 hex digits) of what a cubin runs: its sections' names and bytes, less the debug
/// and line information (which moves with the source's lines) and the symbol and string tables.
/// Two images with one digest run the same machine code with the same attributes, so a source
/// reorganised without changing a kernel keeps its digest. Throws
/// Error(TUNED_STATUS_INTERNAL_ERROR) on an image that is not a 64-bit little-endian ELF file.
std::string cubin_code_digest(const std::vector<char>& image);

/// Persistent cubins (the tuning database implements it). Must be thread-safe.
class CubinStore {
 public:
  virtual ~CubinStore() = default;
  virtual std::optional<CubinRecord> find(const CubinKey& key) = 0;
  virtual void put(const CubinKey& key, const CubinRecord& cubin) = 0;
  /// Removes a damaged entry, if any. Must not throw: a failure only means the next process
  /// finds (and drops) it again.
  virtual void drop(const CubinKey& key) = 0;
};

}  // namespace tuned
