// Floor probe (tests/CMakeLists.txt): compiled in tools/' view, this include of bench/ must not
// compile.
#include "bench/held_out.hpp"
