#include "generator/precompiled.hpp"

namespace tuned {

// A scan, not an index: a process looks up a handful of kernels, and hashing every entry's key
// (hundreds of options strings) cost more than comparing the names it scans.
std::optional<CubinRecord> find_precompiled(const CubinKey& key, const std::string& kernel_name) {
  const auto table = detail::precompiled_table();
  for (size_t i = 0; i < table.count; ++i) {
    const PrecompiledEntry& e = table.entries[i];
    if (kernel_name != e.kernel_name || key.options != e.options || key.arch != e.arch ||
        key.source_hash != e.source_hash) {
      continue;
    }
    const auto* blob = table.blob + e.offset;
    CubinRecord record;
    record.image.assign(reinterpret_cast<const char*>(blob),
                        reinterpret_cast<const char*>(blob) + e.size);
    record.kernel_name = kernel_name;
    record.registers = e.registers;
    return record;
  }
  return std::nullopt;
}

size_t precompiled_count() { return detail::precompiled_table().count; }

}  // namespace tuned
