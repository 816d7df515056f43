// Floor probe (tests/CMakeLists.txt): a call into a higher floor declared by hand, without its
// header, compiles in cache/'s view, but the cache floor's shared library (with core/, the floor
// below) must not link: the symbol is defined in tuner/ only.
#include <string>
#include <vector>

namespace tuned {
std::vector<std::string> strategy_names();  // tuner/strategy.hpp
size_t floor_probe_strategy_count() { return strategy_names().size(); }
}  // namespace tuned
