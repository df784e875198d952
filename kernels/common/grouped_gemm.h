#pragma once
// The grouped GEMM of kernels/ops.inc over a backend's own GEMM (host code, both backends): one
// GEMM per expert with rows, each at the size the expert received, on the backend's engine and
// stream. An expert's product is as large as routing makes it, so each call keeps the engine's
// full efficiency at the shapes a mixture of experts trains at (rows in the hundreds or more).
#include <cstdint>

#include "src/core/error.h"
#include "src/core/typed_ref.h"

namespace zt {

template <class Kernels>
void grouped_gemm_by_expert(bool trans_b, const int64_t* rows, int E, int N, int K, float alpha,
                            CRef A, CRef B, float beta, Ref C, typename Kernels::Exec exec) {
  int64_t at = 0;
  for (int e = 0; e < E; ++e) {
    const int64_t m = rows[e];
    ZT_CHECK(m >= 0 && m <= INT32_MAX, "grouped_gemm: expert {} has {} rows", e, m);
    if (m > 0)
      Kernels::gemm(false, trans_b, static_cast<int>(m), N, K, alpha, A + at * K, K,
                    B + int64_t{e} * N * K, trans_b ? K : N, beta, C + at * N, N, exec);
    at += m;
  }
}

// `zero(ref, elements)` clears an expert's gradient where it received no rows and beta is 0.
template <class Kernels, class Zero>
void grouped_gemm_wgrad_by_expert(const int64_t* rows, int E, int N, int K, float alpha, CRef dC,
                                  CRef A, float beta, Ref dB, typename Kernels::Exec exec,
                                  Zero zero) {
  ZT_CHECK(beta == 0.0f || beta == 1.0f, "grouped_gemm_wgrad: beta {} (0 or 1)", beta);
  int64_t at = 0;
  for (int e = 0; e < E; ++e) {
    const int64_t m = rows[e];
    ZT_CHECK(m >= 0 && m <= INT32_MAX, "grouped_gemm_wgrad: expert {} has {} rows", e, m);
    const Ref dBe = dB + int64_t{e} * N * K;
    if (m > 0)
      Kernels::gemm(true, false, N, K, static_cast<int>(m), alpha, dC + at * N, N, A + at * K, K,
                    beta, dBe, K, exec);
    else if (beta == 0.0f)
      zero(dBe, int64_t{N} * K);
    at += m;
  }
}

}  // namespace zt
