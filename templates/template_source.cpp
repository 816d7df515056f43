#include "templates/template_source.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "tuned/error.hpp"

namespace tuned {

std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

static std::string read_override(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == name) {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    }
  }
  return "";
}

const TemplateSource& template_source(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, TemplateSource> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second;

  TemplateSource source;
  source.name = name;
  if (const char* dir = std::getenv("TUNED_TEMPLATE_DIR"); dir && *dir) {
    source.text = read_override(dir, name);
  }
  if (source.text.empty()) {
    for (const auto& t : detail::embedded_templates()) {
      if (name == t.name) source.text.assign(t.data, t.size);
    }
  }
  if (source.text.empty()) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "no kernel template named " + name);
  }
  source.hash = fnv1a_hex(source.text);
  return loaded.emplace(name, std::move(source)).first->second;
}

KernelSpec template_kernel_spec(const std::string& template_name, const std::string& kernel_name) {
  const TemplateSource& src = template_source(template_name);
  KernelSpec spec;
  spec.source_name = src.name;
  spec.source = src.text;
  spec.source_hash = src.hash;
  spec.kernel_name = kernel_name;
  return spec;
}

}  // namespace tuned
