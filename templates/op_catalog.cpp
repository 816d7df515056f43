#include "templates/op_catalog.hpp"

#include "templates/entropy/entropy_op.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/transpose/transpose_op.hpp"
#include "tuned/error.hpp"

namespace tuned {

std::pair<int64_t, int64_t> OpInfo::range_of(int i) const {
  const auto it = dim_ranges.find(dims[static_cast<size_t>(i)]);
  return it != dim_ranges.end() ? it->second : std::pair<int64_t, int64_t>{1, max_size};
}

int OpInfo::variant_index(const std::string& variant) const {
  std::string known;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i] == variant) return static_cast<int>(i);
    known += (known.empty() ? "" : ", ") + variants[i];
  }
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              name + " variant '" + variant + "': must be one of " + known);
}

const std::vector<OpInfo>& op_infos() {
  static const std::vector<OpInfo> infos = {gemm_op::info(), transpose_op::info(),
                                            entropy_op::info()};
  return infos;
}

const OpInfo* find_op_info(const std::string& name) {
  for (const auto& info : op_infos()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

}  // namespace tuned
