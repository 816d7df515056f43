// The precompiler itself is built without precompiled kernels.
#include "generator/precompiled.hpp"

namespace tuned::detail {
PrecompiledTable precompiled_table() { return {nullptr, 0, nullptr, 0, 0}; }
}  // namespace tuned::detail
