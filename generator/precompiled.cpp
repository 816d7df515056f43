#include "generator/precompiled.hpp"

#include <unordered_map>

namespace tuned {
namespace {

std::string lookup_key(const std::string& arch, const std::string& hash, const std::string& options,
                       const std::string& kernel_name) {
  return arch + "|" + hash + "|" + options + "|" + kernel_name;
}

const std::unordered_map<std::string, const PrecompiledEntry*>& index() {
  static const auto map = [] {
    std::unordered_map<std::string, const PrecompiledEntry*> m;
    const auto table = detail::precompiled_table();
    for (size_t i = 0; i < table.count; ++i) {
      const PrecompiledEntry& e = table.entries[i];
      m.emplace(lookup_key(e.arch, e.source_hash, e.options, e.kernel_name), &e);
    }
    return m;
  }();
  return map;
}

}  // namespace

std::optional<CubinRecord> find_precompiled(const CubinKey& key, const std::string& kernel_name) {
  const auto& map = index();
  const auto it = map.find(lookup_key(key.arch, key.source_hash, key.options, kernel_name));
  if (it == map.end()) return std::nullopt;
  const auto* blob = detail::precompiled_table().blob + it->second->offset;
  CubinRecord record;
  record.image.assign(reinterpret_cast<const char*>(blob),
                      reinterpret_cast<const char*>(blob) + it->second->size);
  record.kernel_name = kernel_name;
  record.registers = it->second->registers;
  return record;
}

size_t precompiled_count() { return detail::precompiled_table().count; }

}  // namespace tuned
