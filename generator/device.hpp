// The GPUs of this machine: how many, and each one's record (core/device_info.hpp), refused where
// this NVRTC cannot target it.
#pragma once

#include "core/device_info.hpp"

namespace tuned {

/// Number of CUDA devices; throws Error(TUNED_STATUS_NO_DEVICE) when there is no driver or device.
int device_count();

/// Queries device `index`. Throws Error(TUNED_STATUS_NO_DEVICE) naming the index and how many
/// devices there are, and Error(TUNED_STATUS_UNSUPPORTED_ARCH) for GPUs NVRTC cannot target.
DeviceInfo query_device(int index);

}  // namespace tuned
