#pragma once
// ZT_HD marks a function body shared by the CPU and CUDA backends: under nvcc it compiles for
// both host and device, elsewhere it is a plain inline function.
#if defined(__CUDACC__)
#define ZT_HD __host__ __device__ __forceinline__
#else
#define ZT_HD inline
#endif
