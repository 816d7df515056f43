// Floor probe (tests/CMakeLists.txt), the control: compiled in cache/'s view, its own folder and
// the floor below it compile, so the probes beside it fail for their include and nothing else.
#include "cache/database.hpp"
#include "core/problem_key.hpp"
