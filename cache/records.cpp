#include "cache/records.hpp"
