#include "tools/autotune_options.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include "cache/database.hpp"
#include "templates/registry.hpp"
#include "tools/exit_codes.hpp"
#include "tools/tool_version.hpp"
#include "tuned/error.hpp"

namespace tuned::tools {
namespace {

constexpr int64_t kMaxDimension = INT32_MAX;  // dimensions reach the kernels as int

// One wording per rule, shared by the command line and the TOML file.
constexpr std::string_view kDeviceRule =
    "must be a CUDA device index (an integer >= 0), a comma-separated list of distinct ones like "
    "0,1,3, or all";
constexpr std::string_view kBudgetRule = "must be a number of seconds > 0";
constexpr std::string_view kMaxTrialsRule = "must be an integer >= 1";
constexpr std::string_view kSeedRule = "must be an integer >= 0 (0: seed from the clock)";
constexpr std::string_view kPathRule = "must not be empty";

// What the registry knows: an op name, or a variant of some op (checked against the chosen op
// once the command line and the file are merged).
const std::vector<std::string>& op_choices() {
  static const std::vector<std::string> names = op_names();
  return names;
}

const std::vector<std::string>& variant_choices() {
  static const std::vector<std::string> variants = [] {
    std::vector<std::string> all;
    for (const OpRegistration& op : op_registrations()) {
      for (const std::string& v : op.variants) {
        if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
      }
    }
    return all;
  }();
  return variants;
}
// "gemm NN|NT|..., transpose T, ...": each op's variants, for --layout's help.
std::string variant_help() {
  std::string text;
  for (const OpRegistration& op : op_registrations()) {
    std::string names;
    for (const std::string& v : op.variants) names += (names.empty() ? "" : "|") + v;
    text += (text.empty() ? "" : "; ") + op.name + " " + names;
  }
  return text;
}
const std::vector<std::string> kStrategies = tuned::strategy_names();
// Sorted, as they are listed in errors.
const std::vector<std::string> kTomlKeys = {"budget", "db",   "device", "layout", "max_trials",
                                            "op",     "seed", "shapes", "space",  "strategy"};

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

[[noreturn]] void fail(const std::string& argument, std::string_view rule, const std::string& got) {
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              argument + ": " + std::string(rule) + ", got '" + got + "'");
}

// --- Value rules, shared by both sources. `argument` is "--device" or "key 'device'". --------

int check_max_trials(int64_t value, const std::string& argument) {
  if (value < 1 || value > INT_MAX) fail(argument, kMaxTrialsRule, std::to_string(value));
  return static_cast<int>(value);
}

double check_budget(double value, const std::string& argument, const std::string& text) {
  if (!std::isfinite(value) || value <= 0) fail(argument, kBudgetRule, text);
  return value;
}

std::string check_choice(const std::string& value, const std::vector<std::string>& choices,
                         const std::string& argument, std::string_view note = "") {
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    fail(argument, "must be one of " + join(choices) + std::string(note), value);
  }
  return value;
}

// A variant of any op, matched without regard to case, in the op's own spelling ("nt" -> "NT",
// "U8" -> "u8").
std::string check_layout(const std::string& value, const std::string& argument) {
  auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  for (const std::string& choice : variant_choices()) {
    if (lower(choice) == lower(value)) return choice;
  }
  fail(argument, "must be one of " + join(variant_choices()) + " (case-insensitive)", value);
  return value;
}

std::string check_path(const std::string& value, const std::string& argument) {
  if (value.empty()) fail(argument, kPathRule, value);
  return value;
}

std::string check_db_path(const std::string& value, const std::string& argument) {
  check_path(value, argument);
  // An existing path must be a database file: a named pipe would block the open until a writer
  // came, a device would be read for ever (a missing file is created later).
  struct stat st;
  if (::stat(value.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    fail(argument,
         S_ISDIR(st.st_mode) ? "must be a database file, not a folder"
                             : "must be a database file, not a named pipe, device or socket",
         value);
  }
  return value;
}

// --- Command-line text to typed values. ------------------------------------------------------

template <typename Integer>
std::optional<Integer> parse_integer(const std::string& text) {
  Integer value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// One device, several or all, into options (the previous selection replaced): "2", "0,1,3", "all".
// A list of one index is that device alone.
void set_devices(std::vector<int64_t> indices, bool all, const std::string& argument,
                 const std::string& text, AutotuneOptions& options) {
  options.all_devices = all;
  options.devices.clear();
  options.device_argument = argument;
  if (all) return;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] > INT_MAX) fail(argument, kDeviceRule, text);
    for (size_t j = 0; j < i; ++j) {
      if (indices[j] == indices[i]) {
        fail(argument,
             std::string(kDeviceRule) + " (device " + std::to_string(indices[i]) +
                 " is listed twice)",
             text);
      }
    }
  }
  if (indices.size() == 1) {
    options.device = static_cast<int>(indices.front());
  } else {
    for (int64_t index : indices) options.devices.push_back(static_cast<int>(index));
  }
}

// --device's text (the command line's, or the file's string): "all", "N" or "N,M,...".
void set_devices_from_text(const std::string& text, const std::string& argument,
                           AutotuneOptions& options) {
  std::vector<int64_t> indices;
  if (text != "all") {
    // Each comma-separated field an integer; an empty one ("0,", "0,,1") breaks the rule.
    for (size_t start = 0;;) {
      const size_t comma = text.find(',', start);
      const auto index = parse_integer<int64_t>(text.substr(start, comma - start));
      if (!index) fail(argument, kDeviceRule, text);
      indices.push_back(*index);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  set_devices(std::move(indices), text == "all", argument, text, options);
}

// Text that is no integer (or out of int64's range) fails with the flag's rule.
int64_t cli_integer(const std::string& text, const std::string& flag, std::string_view rule) {
  std::optional<int64_t> value = parse_integer<int64_t>(text);
  if (!value) fail(flag, rule, text);
  return *value;
}

double cli_budget(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) fail("--budget", kBudgetRule, text);
  return check_budget(value, "--budget", text);
}

uint64_t cli_seed(const std::string& text) {
  // from_chars on an unsigned type rejects a leading '-', so "-1" fails here too.
  std::optional<uint64_t> value = parse_integer<uint64_t>(text);
  if (!value) fail("--seed", kSeedRule, text);
  return *value;
}

// --- TOML. ------------------------------------------------------------------------------------

std::string type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate within two edits of `name`, if any: a guess beyond that misleads more than helps.
std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;
  for (const std::string& candidate : candidates) {
    size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

// Every "--long" name of the app's options (any short one is a single edit from any other).
std::vector<std::string> long_flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// Control characters of the file (a parser's excerpt of it) shown escaped: an error stays one
// line, whatever bytes the file holds.
std::string printable(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return out;
}

Error config_error(const std::string& path, const toml::source_region& where,
                   const std::string& message) {
  return Error(TUNED_STATUS_CONFIG_ERROR,
               "config file '" + path + "', line " + std::to_string(where.begin.line) +
                   ", column " + std::to_string(where.begin.column) + ": " + printable(message));
}

// Reads and checks one TOML document; every error names the file and where in it.
class TomlReader {
 public:
  TomlReader(std::string path, AutotuneOptions& options)
      : path_(std::move(path)), options_(options) {}

  void apply(const toml::table& root) {
    for (auto&& [key, node] : root) {
      const std::string name(key.str());
      if (std::find(kTomlKeys.begin(), kTomlKeys.end(), name) == kTomlKeys.end()) {
        std::string message = "unknown key '" + name + "'";
        if (std::string hint = closest(name, kTomlKeys); !hint.empty()) {
          message += " (did you mean '" + hint + "'?)";
        }
        throw error(key.source(), message + "; valid keys: " + join(kTomlKeys));
      }
      // Rules are checked by the same functions as the command line; their errors gain a place.
      try {
        apply_key(name, node);
      } catch (const Error& e) {
        if (e.status() == TUNED_STATUS_CONFIG_ERROR) throw;
        throw error(node.source(), e.what());
      }
    }
  }

 private:
  Error error(const toml::source_region& where, const std::string& message) const {
    return config_error(path_, where, message);
  }

  Error type_error(const std::string& key, const toml::node& node,
                   std::string_view expected) const {
    return error(node.source(), "key '" + key + "' must be " + std::string(expected) + ", got " +
                                    type_name(node.type()));
  }

  int64_t integer(const std::string& key, const toml::node& node) const {
    if (!node.is_integer()) throw type_error(key, node, "an integer");
    return node.as_integer()->get();
  }

  std::string string(const std::string& key, const toml::node& node) const {
    if (!node.is_string()) throw type_error(key, node, "a string");
    return node.as_string()->get();
  }

  void apply_key(const std::string& key, const toml::node& node) {
    const std::string argument = "key '" + key + "'";
    if (key == "device") {
      apply_device(argument, node);
    } else if (key == "op") {
      options_.op = check_choice(string(key, node), op_choices(), argument);
    } else if (key == "layout") {
      options_.layout = check_layout(string(key, node), argument);
    } else if (key == "budget") {
      if (!node.is_number()) throw type_error(key, node, "a number of seconds (integer or float)");
      // An integer too large for an exact double is still a number of seconds (toml++ would
      // refuse the lossy conversion).
      const double value = node.is_integer() ? static_cast<double>(node.as_integer()->get())
                                             : node.as_floating_point()->get();
      std::ostringstream text;
      text << value;
      options_.budget_s = check_budget(value, argument, text.str());
    } else if (key == "max_trials") {
      options_.max_trials = check_max_trials(integer(key, node), argument);
    } else if (key == "strategy") {
      options_.strategy = check_choice(string(key, node), kStrategies, argument);
    } else if (key == "seed") {
      int64_t value = integer(key, node);
      if (value < 0) fail(argument, kSeedRule, std::to_string(value));
      options_.seed = static_cast<uint64_t>(value);
    } else if (key == "db") {
      options_.db_path = check_db_path(string(key, node), argument);
    } else if (key == "shapes") {
      apply_shapes(node);
    } else if (key == "space") {
      apply_space(node);
    }
  }

  void apply_shapes(const toml::node& node) {
    constexpr std::string_view kExpected = "an array of strings like \"4096x4096x4096\"";
    const toml::array* array = node.as_array();
    if (array == nullptr) throw type_error("shapes", node, kExpected);
    // An empty list is a mistake: leaving the key out tunes the op's default shapes.
    if (array->empty()) {
      throw error(node.source(), "key 'shapes' lists no shapes (leave it out to tune the op's "
                                 "default set)");
    }
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string name = "shapes[" + std::to_string(i) + "]";
      if (!element.is_string()) throw type_error(name, element, "a string like \"4096x4096x4096\"");
      try {
        shapes.push_back(parse_shape(element.as_string()->get()));
      } catch (const Error& e) {
        throw error(element.source(), "key '" + name + "': " + e.what());
      }
    }
    options_.shapes = std::move(shapes);
  }

  // device = 1, "all", "0,1" or [0, 1]. A later error about the devices (one not on this
  // machine) names the file.
  void apply_device(const std::string& argument, const toml::node& node) {
    apply_device_value(argument, node);
    options_.device_argument = "key 'device' of config file '" + path_ + "'";
  }

  void apply_device_value(const std::string& argument, const toml::node& node) {
    if (node.is_integer()) {
      const int64_t index = node.as_integer()->get();
      set_devices({index}, false, argument, std::to_string(index), options_);
    } else if (node.is_string()) {
      set_devices_from_text(node.as_string()->get(), argument, options_);
    } else if (const toml::array* array = node.as_array()) {
      std::vector<int64_t> indices;
      std::string text;
      for (const toml::node& element : *array) {
        if (!element.is_integer()) {
          throw type_error("device", element, "an integer (a CUDA device index)");
        }
        indices.push_back(element.as_integer()->get());
        text += (text.empty() ? "" : ",") + std::to_string(indices.back());
      }
      if (indices.empty()) throw error(node.source(), "key 'device' lists no devices");
      set_devices(std::move(indices), false, argument, text, options_);
    } else {
      throw type_error("device", node,
                       "an integer (a CUDA device index), \"all\", or a list like [0, 1]");
    }
  }

  void apply_space(const toml::node& node) {
    const toml::table* table = node.as_table();
    if (table == nullptr) throw type_error("space", node, "a table like [space] BM = [64, 128]");
    std::map<std::string, std::vector<int>> space;
    for (auto&& [key, value] : *table) {
      const std::string name = "space." + std::string(key.str());
      constexpr std::string_view kExpected = "an integer or an array of integers";
      std::vector<int>& values = space[std::string(key.str())];
      auto add = [&](const toml::node& element) {
        if (!element.is_integer()) throw type_error(name, element, kExpected);
        int64_t v = element.as_integer()->get();
        if (v < INT_MIN || v > INT_MAX) {
          throw error(element.source(), "key '" + name + "': " + std::to_string(v) +
                                            " does not fit in a 32-bit integer");
        }
        values.push_back(static_cast<int>(v));
      };
      if (const toml::array* array = value.as_array()) {
        // An empty list would leave nothing to tune: a mistake, never an intention.
        if (array->empty()) throw error(value.source(), "key '" + name + "' lists no values");
        for (const toml::node& element : *array) add(element);
      } else {
        add(value);
      }
    }
    options_.space = std::move(space);
  }

  std::string path_;
  AutotuneOptions& options_;
};

}  // namespace

std::vector<int64_t> parse_shape(const std::string& text) {
  // Any rank a ProblemId holds: the op checks its own (validate_request).
  static const std::string kRule =
      "a shape is 1 to " + std::to_string(ProblemId::kMaxRank) +
      " integers in 0..2147483647 separated by 'x', like 4096x4096x4096 (the op says how many and "
      "each one's range)";
  auto reject = [&](const std::string& why) -> void {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "'" + text + "' is not a shape: " + why + " (" + kRule + ")");
  };
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string_view field = std::string_view(text).substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    const std::string ordinal = "dimension " + std::to_string(dims.size() + 1);
    if (field.empty()) reject(ordinal + " is empty");
    int64_t value = 0;
    for (char c : field) {
      if (c < '0' || c > '9') reject(ordinal + " '" + std::string(field) + "' is not a number");
      value = value * 10 + (c - '0');
      // Stop before int64 could overflow on long digit strings.
      if (value > kMaxDimension) reject(ordinal + " is larger than 2147483647");
    }
    dims.push_back(value);  // 0 is the op's to judge (entropy's radius may be 0, sizes may not)
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (dims.size() > static_cast<size_t>(ProblemId::kMaxRank)) {
    reject("it has " + std::to_string(dims.size()) + " dimension" + (dims.size() == 1 ? "" : "s"));
  }
  return dims;
}

// A file's text (what: "config file", "shapes file"): a regular file of at most limit bytes.
// Opened without blocking (a named pipe would wait for a writer) and examined before it is read,
// so a device (/dev/zero), a pipe or a huge file is one clear error, not a hang or an allocation
// that grows without bound.
std::string read_small_file(const std::string& path, uint64_t limit, const std::string& what) {
  auto unreadable = [&](const std::string& why) {
    return Error(TUNED_STATUS_CONFIG_ERROR, "cannot read " + what + " '" + path + "': " + why);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw unreadable(errno == ENOENT ? "no such file" : std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw unreadable(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw unreadable("it is a directory");
  if (!S_ISREG(st.st_mode)) {
    throw unreadable("it is not a regular file (a named pipe, device or socket)");
  }
  const std::string rule = "a " + what + " is at most " + std::to_string(limit) + " bytes";
  if (static_cast<uint64_t>(st.st_size) > limit) {
    throw unreadable("it is " + std::to_string(st.st_size) + " bytes; " + rule);
  }
  std::string text;
  char buffer[65536];
  for (;;) {  // (the file may grow while it is read: the limit holds for what is read)
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw unreadable(std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > limit) throw unreadable("it grew past the limit; " + rule);
  }
  return text;
}

void apply_toml_file(const std::string& path, AutotuneOptions& options) {
  const std::string content = read_small_file(path, kMaxConfigBytes, "config file");
  toml::table root;
  try {
    root = toml::parse(content, path);
  } catch (const toml::parse_error& e) {
    throw config_error(path, e.source(), "TOML syntax error: " + std::string(e.description()));
  }
  // Apply to a copy so that a file with an error leaves the options as they were.
  AutotuneOptions updated = options;
  TomlReader(path, updated).apply(root);
  options = std::move(updated);
}

std::vector<ShapeRequest> read_shapes_file(const std::string& path, const std::string& default_op,
                                           const std::string& default_layout) {
  const std::string text = read_small_file(path, kMaxShapesBytes, "shapes file");
  std::vector<ShapeRequest> requests;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    auto bad = [&](const std::string& why) {
      return Error(TUNED_STATUS_CONFIG_ERROR,
                   path + ":" + std::to_string(number) + ": " + why +
                       " (a line is [OP] [LAYOUT] SHAPE [align N], like 'gemm NN 4096x1024x512 "
                       "align 4'; '#' starts a comment)");
    };
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string t; fields >> t;) tokens.push_back(t);
    if (tokens.empty()) continue;
    ShapeRequest r{default_op, default_layout, {}, 0};
    size_t i = 0;
    const auto& ops = op_choices();
    if (std::find(ops.begin(), ops.end(), tokens[i]) != ops.end()) r.op = tokens[i++];
    // A layout is a word; a shape starts with a digit.
    if (i < tokens.size() && !std::isdigit(static_cast<unsigned char>(tokens[i][0]))) {
      try {
        r.layout = check_layout(tokens[i++], "layout");
      } catch (const Error& e) {
        throw bad(std::string(e.what()) + (i == 1 ? " (or an op: " + join(ops) + ")" : ""));
      }
    }
    if (i == tokens.size()) throw bad("no shape");
    try {
      r.shape = parse_shape(tokens[i++]);
    } catch (const Error& e) {
      throw bad(e.what());
    }
    if (i < tokens.size() && tokens[i] == "align") {
      const std::string value = i + 1 < tokens.size() ? tokens[i + 1] : "";
      int alignment = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), alignment);
      if (ec != std::errc() || end != value.data() + value.size() || alignment < 1 ||
          alignment > 16 || (alignment & (alignment - 1)) != 0) {
        throw bad("align must be followed by a power of two from 1 to 16, got '" + value + "'");
      }
      r.alignment = alignment;
      i += 2;
    }
    if (i < tokens.size()) throw bad("unexpected '" + tokens[i] + "' after the shape");
    try {
      validate_request({r.op, r.shape, r.layout, {}});
    } catch (const Error& e) {
      throw bad(e.what());
    }
    if (std::find(requests.begin(), requests.end(), r) == requests.end()) requests.push_back(r);
  }
  if (requests.empty()) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, path + ": no problem to tune (the file lists none)");
  }
  return requests;
}

bool several_devices(const AutotuneOptions& options) {
  return options.all_devices || !options.devices.empty();
}

std::string device_text(const AutotuneOptions& options) {
  if (options.all_devices) return "all";
  if (options.devices.empty()) return std::to_string(options.device);
  std::string text;
  for (int index : options.devices) text += (text.empty() ? "" : ",") + std::to_string(index);
  return text;
}

std::vector<int> selected_devices(const AutotuneOptions& options, int count) {
  if (options.all_devices) {
    std::vector<int> all;
    for (int index = 0; index < count; ++index) all.push_back(index);
    return all;
  }
  if (options.devices.empty()) return {options.device};
  for (int index : options.devices) {
    if (index >= count) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  options.device_argument + " " + device_text(options) + ": device " +
                      std::to_string(index) + " is not on this machine: a listed device must be " +
                      "below " + std::to_string(count) + ", the number of CUDA devices it has " +
                      "(numbered from 0)");
    }
  }
  return options.devices;
}

double estimated_work(const ShapeRequest& problem) {
  const OpRegistration& op = find_op(problem.op);
  double work = 1;
  for (int i = 0; i < static_cast<int>(problem.shape.size()) && i < op.max_rank(); ++i) {
    // Sizes, and a batch (its products are work too); not an entropy window's radius or levels.
    const std::string& dim = op.dim_name(i);
    if (op.dim_ranges.count(dim) == 0 || i >= op.rank()) {
      work *= static_cast<double>(problem.shape[static_cast<size_t>(i)]);
    }
  }
  return work;
}

std::vector<ShapeRequest> shape_requests(const AutotuneOptions& options) {
  if (!options.recorded.empty()) return options.recorded;
  std::vector<ShapeRequest> requests;
  for (std::vector<int64_t> shape :
       options.shapes.empty() ? default_shapes(options.op) : options.shapes) {
    if (options.batch > 0) shape.push_back(options.batch);
    requests.push_back({options.op, options.layout, shape, 0});
  }
  return requests;
}

TaskRequest task_request(const AutotuneOptions& options, const ShapeRequest& problem) {
  TaskRequest request{problem.op, problem.shape, problem.layout, {}};
  if (problem.op == options.op) request.space = options.space;
  return request;
}

namespace {

// The command line's values, taken as text and checked by apply_command_line, so that every error
// names the flag and the rule in the same words as the TOML file's errors; and each option, which
// says whether it was given.
struct CommandLineText {
  std::string device, op, layout, budget, max_trials, patience, strategy, db, config, seed, batch,
      shapes_from, json_path, report, store, lease, node, replay_gpus, replay_pace;
  std::vector<std::string> shapes, device_models, replay;
  bool verbose = false, no_wait = false, remeasure = false, flush_l2 = false, enqueue = false,
       worker = false, status = false, wait = false, quiet = false, progress = false, wide = false;
  CLI::Option *device_opt, *op_opt, *shape_opt, *shapes_from_opt, *json_opt, *report_opt,
      *layout_opt, *budget_opt, *max_trials_opt, *patience_opt, *strategy_opt, *db_opt,
      *config_opt, *seed_opt,
      *batch_opt, *store_opt, *lease_opt, *node_opt, *device_model_opt, *replay_opt,
      *replay_gpus_opt, *replay_pace_opt, *enqueue_opt, *worker_opt, *status_opt, *wait_opt;
};

bool given(const CLI::Option* option) { return option->count() > 0; }

// The help's last lines: the TOML file's keys and each op's parameters with their values.
std::string help_footer() {
  std::string footer = "Keys of the TOML file: " + join(kTomlKeys) +
                       ";\n[space] narrows the op's parameters to some of their values, e.g. "
                       "BM = [64, 128]:";
  for (const OpRegistration& registered : op_registrations()) {
    footer += "\n  " + registered.name + ":";
    for (const Param& p : registered.params) {
      std::vector<std::string> values;
      for (int v : p.values) values.push_back(std::to_string(v));
      footer += " " + p.name + " {" + join(values, ",") + "}";
    }
  }
  return footer;
}

void declare_options(CLI::App& app, CommandLineText& t) {
  auto scalar = [&](const std::string& name, std::string& target, const std::string& type,
                    const std::string& description) {
    return app.add_option(name, target, description)
        ->type_name(type)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
  };
  t.device_opt =
      scalar("--device", t.device, "N|N,M,...|all",
             "CUDA device index (default 0); a list or all shares the shapes out over those GPUs, "
             "one tuner each, into one database");
  t.op_opt = scalar("--op", t.op, "OP",
                    "operation to tune: " + join(op_choices(), "|") + " (default gemm)");
  t.shape_opt = app.add_option("--shape", t.shapes,
                               "problem shape, repeatable or ','-separated (default: the op's set)")
                    ->type_name("MxNxK")
                    ->delimiter(',');
  t.shapes_from_opt = scalar(
      "--shapes-from", t.shapes_from, "FILE",
      "tune the problems listed in FILE, one per line: [OP] [LAYOUT] SHAPE [align N] (what "
      "TUNED_RECORD=FILE records from a program's calls); --op and --layout fill in what a line "
      "omits");
  t.shapes_from_opt->excludes(t.shape_opt);
  t.batch_opt = scalar("--batch", t.batch, "N",
                       "tune each shape as a strided batch of N products (tuned_gemm_strided_"
                       "batched; a batch is a problem of its own; ops with a BATCH dimension)");
  t.batch_opt->excludes(t.shapes_from_opt);
  t.json_opt = scalar("--json", t.json_path, "FILE",
                      "also write the results table as JSON to FILE (rewritten after "
                      "each problem)");
  t.report_opt = scalar("--report", t.report, "FILE.html",
                        "at the end, write the run's tuning report to FILE (tunedb report's page "
                        "for the problems this run tuned and its sessions)");
  t.layout_opt = scalar("--layout", t.layout, "LAYOUT",
                        "the op's variant (default its first): " + variant_help());
  t.budget_opt = scalar("--budget", t.budget, "SECONDS",
                        "wall-clock budget of the whole run on one GPU (default 60 per shape); "
                        "over several GPUs each shape gets the same share, so the run "
                        "takes about 1/N of it");
  t.max_trials_opt = scalar("--max-trials", t.max_trials, "N",
                            "most candidates timed per shape (default: no limit)");
  t.patience_opt =
      scalar("--patience", t.patience, "N",
             "end a shape after N trials in a row find nothing faster (default: never)");
  t.strategy_opt =
      scalar("--strategy", t.strategy, "NAME",
             "search strategy: " + join(kStrategies, "|") + " (default " + tuned::kDefaultStrategy +
                 ": the best of bench/results/tuning_quality.json)");
  t.db_opt = scalar("--db", t.db, "PATH",
                    "tuning database (default: $TUNED_DB, else the user's; now " +
                        cache::default_database_path() + ")");
  t.config_opt = scalar("--config", t.config, "FILE.toml",
                        "TOML file of options; the command line overrides it");
  t.seed_opt = scalar("--seed", t.seed, "N", "random seed (default 0: from the clock)");
  CLI::Option* verbose = app.add_flag("-v,--verbose", t.verbose, "print every trial");
  // Progress: a status line rewritten in place on a terminal (shape i of N, trials, best, elapsed,
  // ETA); nothing where stderr is no terminal, unless asked for as lines.
  CLI::Option* quiet =
      app.add_flag("-q,--quiet", t.quiet, "no progress (default: shown where stderr is a terminal)");
  CLI::Option* progress = app.add_flag(
      "--progress", t.progress,
      "progress as lines even where stderr is no terminal (a log, a pipe): every few seconds and "
      "at each new best");
  quiet->excludes(verbose)->excludes(progress);
  app.add_flag("--wide", t.wide,
               "print configs whole in the results table (abbreviated otherwise; --json holds them "
               "whole)");
  app.add_flag("--no-wait", t.no_wait,
               "exit 1 if another tuner holds the GPU, instead of waiting for it");
  app.add_flag("--remeasure", t.remeasure,
               "measure again configs that earlier runs measured for a shape (default: resume, "
               "skipping them)");
  app.add_flag("--flush-l2", t.flush_l2,
               "time the final round of each shape's leaders (and the baseline) with the L2 cache "
               "flushed before every call, as for operands that were evicted (default: calls back "
               "to back)");
  // Many machines: a store and its queue.
  t.store_opt = scalar("--store", t.store, "URL",
                       "a PostgreSQL tuning store (libpq connection string or postgresql:// URI; "
                       "password from ~/.pgpass or PGPASSWORD): with --enqueue, --worker or "
                       "--status");
  t.enqueue_opt = app.add_flag("--enqueue", t.enqueue,
                               "put the problems (--shapes-from, --shape, the op's set) in the "
                               "store's queue with this command's budget per shape, strategy, "
                               "trial limit and seed, instead of tuning them here");
  t.worker_opt = app.add_flag("--worker", t.worker,
                              "tune the store's queued tasks on --device (N, a list or all) "
                              "until none is left, each trial and best written to the store as "
                              "measured; a worker killed at any moment is resumed by another");
  t.status_opt = app.add_flag("--status", t.status,
                              "show the store's queue: queued, running (node, GPU, elapsed), done, "
                              "failed");
  t.enqueue_opt->excludes(t.worker_opt)->excludes(t.status_opt);
  t.worker_opt->excludes(t.status_opt);
  t.device_model_opt =
      app.add_option("--device-model", t.device_models,
                     "with --enqueue: tasks for this GPU model only (its name as nvidia-smi prints "
                     "it; repeatable: a task per model; default: any GPU)")
          ->type_name("NAME");
  t.lease_opt = scalar("--lease", t.lease, "SECONDS",
                       "with --worker: how long a claimed task stays a worker's without its "
                       "heartbeat (default 60; renewed every third)");
  t.wait_opt = app.add_flag("--wait", t.wait,
                            "with --worker: wait for new tasks once the queue is empty (default: "
                            "end when nothing is queued or running)");
  t.node_opt = scalar("--node", t.node, "NAME",
                      "with --worker: the name the store shows for this worker (default: the "
                      "host's name)");
  t.replay_opt = app.add_option("--replay", t.replay,
                                "recorded spaces (FILE.tsv.gz or folders of them, bench/replay) "
                                "stand in for the GPUs: each trial is the recorded one (tests and "
                                "studies of a run's policy, no GPU needed)")
                     ->type_name("PATH");
  t.replay_gpus_opt = scalar("--replay-gpus", t.replay_gpus, "N",
                             "with --replay: how many GPUs it stands in for (default 1; "
                             "--device all takes them all)");
  t.replay_pace_opt = scalar("--replay-pace", t.replay_pace, "MS",
                             "with --replay: wall time spent per trial (default 0)");
}

// What is wrong with the first argument CLI11 did not take, or nothing. (Extras are collected
// rather than thrown: CLI11 lists them in reverse order and without a hint, while naming the first
// one and the flag it resembles reads better.)
std::optional<std::string> extras_error(const CLI::App& app) {
  const std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return std::nullopt;
  const std::string& first = extras.front();
  if (first.size() < 2 || first[0] != '-') {
    return "unexpected argument '" + first + "': autotune takes only options";
  }
  std::string name = first.substr(0, first.find('='));
  std::string message = "unknown option '" + name + "'";
  if (std::string hint = closest(name, long_flag_names(app)); !hint.empty()) {
    message += " (did you mean '" + hint + "'?)";
  }
  return message;
}

// "MxNxK[xBATCH]": an op's dimensions as a shape names them.
std::string shape_dims_text(const OpInfo& op) {
  std::string text;
  for (int i = 0; i < op.max_rank(); ++i) {
    text += (i == op.rank() ? "[x" : i ? "x" : "") + op.dim_name(i);
  }
  return op.max_rank() > op.rank() ? text + "]" : text;
}

// A whole number of unit from lowest to highest, or Error naming the flag and the range.
int cli_bounded(const std::string& text, const std::string& flag, int lowest, int highest,
                const std::string& unit) {
  // One rule for text that is no integer and for one out of range.
  const std::string rule = "must be a whole number of " + unit + " from " +
                           std::to_string(lowest) + " to " + std::to_string(highest);
  const int64_t value = cli_integer(text, flag, rule);
  if (value < lowest || value > highest) fail(flag, rule, text);
  return static_cast<int>(value);
}

// Many machines: the mode, its store and the options only a mode takes; --replay's GPUs.
void apply_queue_options(const CommandLineText& t, AutotuneOptions& options) {
  using Mode = AutotuneOptions::QueueMode;
  options.queue_mode = t.enqueue  ? Mode::kEnqueue
                       : t.worker ? Mode::kWorker
                       : t.status ? Mode::kStatus
                                  : Mode::kNone;
  const char* mode = t.enqueue ? "--enqueue" : t.worker ? "--worker" : "--status";
  if (options.queue_mode != Mode::kNone && !given(t.store_opt)) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                std::string(mode) + ": needs --store URL (the PostgreSQL store of the queue)");
  }
  if (given(t.store_opt)) {
    if (options.queue_mode == Mode::kNone) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "--store: give --enqueue, --worker or --status with it (tunedb push and pull "
                  "send and bring results)");
    }
    if (t.store.empty()) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--store: must not be empty");
    options.store_url = t.store;
  }
  auto only_with = [&](const CLI::Option* option, const char* name, Mode needed,
                       const char* needed_name) {
    if (given(option) && options.queue_mode != needed) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  std::string(name) + ": only with " + needed_name);
    }
  };
  // A worker takes its problems and their tuning from the queue; --status only reads it.
  if (options.queue_mode == Mode::kWorker || options.queue_mode == Mode::kStatus) {
    for (const auto& [option, name] :
         {std::pair{t.shape_opt, "--shape"}, {t.shapes_from_opt, "--shapes-from"},
          {t.batch_opt, "--batch"}, {t.budget_opt, "--budget"}, {t.max_trials_opt, "--max-trials"},
          {t.patience_opt, "--patience"}, {t.strategy_opt, "--strategy"}, {t.seed_opt, "--seed"},
          {t.json_opt, "--json"}, {t.report_opt, "--report"}, {t.layout_opt, "--layout"}}) {
      if (given(option)) {
        throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                    std::string(name) + ": not with " + mode +
                        " (the queue's tasks carry their problems and how to tune them)");
      }
    }
  }
  for (const auto& [option, name] : {std::pair{t.json_opt, "--json"}, {t.report_opt, "--report"}}) {
    if (options.queue_mode == Mode::kEnqueue && given(option)) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  std::string(name) + ": not with --enqueue (nothing is tuned here)");
    }
  }
  only_with(t.device_model_opt, "--device-model", Mode::kEnqueue, "--enqueue");
  only_with(t.lease_opt, "--lease", Mode::kWorker, "--worker");
  only_with(t.wait_opt, "--wait", Mode::kWorker, "--worker");
  only_with(t.node_opt, "--node", Mode::kWorker, "--worker");
  for (const std::string& model : t.device_models) {
    if (model.empty()) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--device-model: must not be empty");
  }
  options.device_models = t.device_models;
  if (given(t.lease_opt)) options.lease_s = cli_bounded(t.lease, "--lease", 2, 86400, "seconds");
  options.wait = t.wait;
  options.node = t.node;
  if (options.queue_mode == Mode::kEnqueue && !options.space.empty()) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "--enqueue: a [space] restriction does not travel with queued tasks; tune "
                "restricted spaces here, without --enqueue");
  }
  if (options.queue_mode == Mode::kEnqueue && several_devices(options)) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "--device: --enqueue tunes nothing here (workers choose their devices)");
  }
  options.replay = t.replay;
  if ((given(t.replay_gpus_opt) || given(t.replay_pace_opt)) && t.replay.empty()) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                std::string(given(t.replay_gpus_opt) ? "--replay-gpus" : "--replay-pace") +
                    ": only with --replay");
  }
  if (given(t.replay_gpus_opt)) {
    options.replay_gpus = cli_bounded(t.replay_gpus, "--replay-gpus", 1, 64, "GPUs");
  }
  if (given(t.replay_pace_opt)) {
    options.replay_pace_ms = cli_bounded(t.replay_pace, "--replay-pace", 0, 60000, "milliseconds");
  }
}

// Defaults < TOML file < command line; throws Error naming the flag and the rule.
void apply_command_line(const CommandLineText& t, AutotuneOptions& options) {
  if (given(t.config_opt)) {
    options.config_file = check_path(t.config, "--config");
    apply_toml_file(options.config_file, options);
  }
  if (given(t.device_opt)) set_devices_from_text(t.device, "--device", options);
  if (given(t.op_opt)) options.op = check_choice(t.op, op_choices(), "--op");
  if (given(t.shape_opt)) {
    options.shapes.clear();
    for (const std::string& text : t.shapes) {
      try {
        options.shapes.push_back(parse_shape(text));
      } catch (const Error& e) {
        throw Error(e.status(), std::string("--shape: ") + e.what());
      }
    }
  }
  if (given(t.batch_opt)) {
    constexpr std::string_view kBatchRule = "must be a whole number of products from 1 to 2147483647";
    options.batch = cli_integer(t.batch, "--batch", kBatchRule);
    if (options.batch < 1 || options.batch > INT_MAX) fail("--batch", kBatchRule, t.batch);
    const OpInfo& op = find_op(options.op);
    if (op.dim_index("BATCH") < 0) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "--batch: op " + op.name + " has no BATCH dimension (shapes " +
                      shape_dims_text(op) + ")");
    }
    for (const auto& shape : options.shapes) {
      if (static_cast<int>(shape.size()) > op.dim_index("BATCH")) {
        throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                    "--batch: shape " + tuned::shape_string(shape) +
                        " already gives a batch; give it once");
      }
    }
  }
  if (given(t.layout_opt)) options.layout = check_layout(t.layout, "--layout");
  if (given(t.budget_opt)) options.budget_s = cli_budget(t.budget);
  if (given(t.max_trials_opt)) {
    options.max_trials =
        check_max_trials(cli_integer(t.max_trials, "--max-trials", kMaxTrialsRule), "--max-trials");
  }
  if (given(t.patience_opt)) {
    options.patience =
        check_max_trials(cli_integer(t.patience, "--patience", kMaxTrialsRule), "--patience");
  }
  if (given(t.strategy_opt)) options.strategy = check_choice(t.strategy, kStrategies, "--strategy");
  if (given(t.db_opt)) options.db_path = check_db_path(t.db, "--db");
  if (given(t.seed_opt)) options.seed = cli_seed(t.seed);
  if (given(t.json_opt)) options.json_path = check_path(t.json_path, "--json");
  if (given(t.report_opt)) options.report_path = check_path(t.report, "--report");
  if (given(t.shapes_from_opt)) {
    options.shapes_from = check_path(t.shapes_from, "--shapes-from");
    options.recorded = read_shapes_file(options.shapes_from, options.op, options.layout);
  }
  apply_queue_options(t, options);
  options.verbose = t.verbose;
  options.quiet = t.quiet;
  options.progress = t.progress;
  options.wide = t.wide;
  options.no_wait = t.no_wait;
  options.remeasure = t.remeasure;
  options.flush_l2 = t.flush_l2;
  // Every task the run would tune, checked now: no input error waits for the device.
  for (const ShapeRequest& problem : shape_requests(options)) {
    validate_request(task_request(options, problem));
  }
}

ParseResult exit_with(int code, const std::string& message) {
  ParseResult result;
  result.exit_now = true;
  result.exit_code = code;
  result.message = message;
  return result;
}

}  // namespace

ParseResult parse_autotune_command_line(int argc, const char* const* argv) {
  CLI::App app{"Tunes tuned's kernels on one GPU (or several) and records the best configurations.",
               "autotune"};
  app.get_formatter()->column_width(24);
  add_version_flag(app, "autotune");
  app.footer(help_footer() + "\n\n" + exit_codes_help("; 130 interrupted (Ctrl-C)"));
  CommandLineText text;
  declare_options(app, text);
  app.allow_extras();

  auto usage_error = [](const std::string& message) {
    return exit_with(kExitUsage, "autotune: " + message + " (see autotune --help)");
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return exit_with(0, app.help());
  } catch (const CLI::CallForVersion& e) {
    return exit_with(0, e.what());
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (std::optional<std::string> error = extras_error(app)) return usage_error(*error);
  ParseResult result;
  try {
    apply_command_line(text, result.options);
  } catch (const Error& e) {
    return exit_with(kExitUsage, "autotune: " + std::string(e.what()));
  }
  return result;
}

}  // namespace tuned::tools
