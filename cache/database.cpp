#include "cache/database.hpp"
