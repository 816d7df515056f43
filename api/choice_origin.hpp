#pragma once
// Where the runtime's choice of a config for a problem came from, in the order it looks: a best
// stored for this GPU (measured by autotune, or by first-use tuning), one of a twin GPU of the
// same model, the shipped table's entry, the selection model's pick, a nearby tuned shape's best,
// or the op's fallback. The runtime branches on the kind; the text is for logs and describe().
#include <string>
#include <utility>

namespace tuned {

enum class Origin { kExact, kFirstUse, kTwin, kShipped, kModel, kNearest, kDefault };

struct ChoiceOrigin {
  ChoiceOrigin() = default;
  ChoiceOrigin(Origin k, std::string d = {}) : kind(k), detail(std::move(d)) {}  // NOLINT: implicit
  Origin kind = Origin::kDefault;
  std::string detail;  // the twin's UUID, the nearest shape ("MxNxK"); empty otherwise
  /// "exact", "first-use", "twin <uuid>", "shipped", "model", "nearest MxNxK" or "default".
  std::string text() const;
  /// Measured for this very GPU and problem: nothing for first-use tuning to improve on.
  bool measured_here() const { return kind == Origin::kExact || kind == Origin::kFirstUse; }
};

}  // namespace tuned
