// Every op's OpInfo, in the registry's order (a CPU test holds the two lists equal).
#pragma once

#include <string>
#include <vector>

#include "templates/op_info.hpp"

namespace tuned {

const std::vector<OpInfo>& op_infos();
/// The op called name, or null.
const OpInfo* find_op_info(const std::string& name);

}  // namespace tuned
