#include "api/choice_origin.hpp"

namespace tuned {

std::string ChoiceOrigin::text() const {
  const char* name = "default";
  switch (kind) {
    case Origin::kExact:
      name = "exact";
      break;
    case Origin::kFirstUse:
      name = "first-use";
      break;
    case Origin::kTwin:
      name = "twin";
      break;
    case Origin::kShipped:
      name = "shipped";
      break;
    case Origin::kModel:
      name = "model";
      break;
    case Origin::kNearest:
      name = "nearest";
      break;
    case Origin::kDefault:
      name = "default";
      break;
  }
  return detail.empty() ? name : name + (" " + detail);
}

}  // namespace tuned
