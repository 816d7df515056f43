// Floor probe (tests/CMakeLists.txt): compiled in cache/'s library view, this include of a higher
// floor must not compile.
#include "tuner/strategy.hpp"
