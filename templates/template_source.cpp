#include "templates/template_source.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
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

// One file's text as written: from TUNED_TEMPLATE_DIR where set and it has the file, else embedded;
// empty when there is none.
static std::string file_text(const std::string& name) {
  std::string text;
  if (const char* dir = std::getenv("TUNED_TEMPLATE_DIR"); dir && *dir)
    text = read_override(dir, name);
  if (text.empty()) {
    for (const auto& t : detail::embedded_templates()) {
      if (name == t.name) text.assign(t.data, t.size);
    }
  }
  return text;
}

// The name a line includes with quotes (`#include "gemm_mma.cuh"`), or "" for any other line.
static std::string quoted_include(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  const size_t open = line.find_first_not_of(" \t", i + 7);
  if (open == std::string::npos || line[open] != '"') return "";
  const size_t close = line.find('"', open + 1);
  if (close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

// name's text with each file it includes with quotes put in its place, each file once (the
// headers' #pragma once, done here), between #line directives that keep compiler messages naming
// the file and line they come from.
static void expand(const std::string& name, const std::string& includer,
                   std::set<std::string>& included, std::string& out) {
  const std::string text = file_text(name);
  if (text.empty()) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, includer.empty()
                                                 ? "no kernel template named " + name
                                                 : "kernel template " + includer + " includes " +
                                                       name + ", which is no kernel template");
  }
  included.insert(name);
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string header = quoted_include(line);
    if (header.empty()) {
      out += line;
      out += '\n';
      continue;
    }
    if (included.count(header)) continue;
    out += "#line 1 \"" + header + "\"\n";
    expand(header, name, included, out);
    out += "#line " + std::to_string(number + 1) + " \"" + name + "\"\n";
  }
}

const TemplateSource& template_source(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, TemplateSource> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second;

  TemplateSource source;
  source.name = name;
  std::set<std::string> included;
  expand(name, "", included, source.text);
  // The hash is of the text NVRTC compiles: a change to any file included keys new cubins.
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
