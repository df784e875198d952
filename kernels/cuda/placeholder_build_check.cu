// Temporary: keeps zt_kernels_cuda non-empty until the kernels land.
#include "kernels/cuda/ops.h"
