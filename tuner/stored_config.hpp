// What a best from elsewhere must pass before a database takes it (tunedb merge and import):
// its config against its op's rules for its key, on a GPU like the one that measured it, the same
// check the runtime makes before it serves a stored config (OpFace::fit). Generic: every op
// through its registration.
#pragma once

#include "cache/merge.hpp"
#include "cache/records.hpp"

namespace tuned {

/// The verdict on best: refused (with the rule it breaks) where its op, variant or shape is not
/// one this build knows, or its config is not a config of the op's space that fits the key (its
/// alignment class included) on a GPU of the device's compute capability and SM count, with the
/// opt-in limits of that architecture (generator's reference_device); where the device is not
/// known, against the op's declared parameters and values only. Also gives the hash of the
/// template this build compiles the config from.
cache::BestVerdict check_stored_best(const cache::BestRecord& best,
                                     const cache::DeviceRecord* device);

}  // namespace tuned
