#include "templates/op_info.hpp"

#include "tuned/error.hpp"

namespace tuned {

const std::string& OpInfo::dim_name(int i) const {
  return i < rank() ? dims[static_cast<size_t>(i)] : optional_dims[static_cast<size_t>(i - rank())];
}

int OpInfo::dim_index(const std::string& dim) const {
  for (int i = 0; i < max_rank(); ++i) {
    if (dim_name(i) == dim) return i;
  }
  return -1;
}

std::pair<int64_t, int64_t> OpInfo::range_of(int i) const {
  const auto it = dim_ranges.find(dim_name(i));
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

}  // namespace tuned
