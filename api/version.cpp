// tuned_version() alone in its object: a program that links libtuned.a and asks only the version
// (tunedb --version) takes nothing else with it, not the C API's runtime, kernels and cuBLAS.
#include "tuned/tuned.h"

extern "C" const char* tuned_version(void) { return TUNED_VERSION_STRING; }
