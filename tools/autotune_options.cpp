#include "tools/autotune_options.hpp"
