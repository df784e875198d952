// bench_grouped_gemm: a mixture of experts' grouped GEMM (Kernels::grouped_gemm, the experts'
// first MLP product) against one GEMM of the same total FLOPs. Prints one JSON object (stdout):
// the machine, each case's median milliseconds over its repeats, and the ratio one / grouped
// (1.0: grouping costs nothing).
//
// Usage: bench_grouped_gemm [--tokens N] [--experts E] [--topk K] [--hidden C] [--ffn F]
//                           [--repeats R] [--dtype fp32|bf16]
//   N tokens (default 4096) routed to K (2) of E (8) experts, spread evenly (N·K/E rows each)
//   and, as a second case, skewed (expert e gets rows in proportion to e + 1); each product is
//   [rows, C] × [2F, C]ᵀ (C 1024, F 2816: a SwiGLU's gate|up). R timed runs (default 7) after
//   one untimed. Threads: OMP_NUM_THREADS.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "bench/machine.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "src/core/half.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int repeats, F&& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename T>
nlohmann::json run_dtype(int64_t N, int E, int K, int C, int F, int repeats) {
  const int64_t M = N * K;
  const int out = 2 * F;
  std::vector<T> a(static_cast<size_t>(M * C), zt::from_float<T>(0.01f));
  std::vector<T> b(static_cast<size_t>(int64_t{E} * out * C), zt::from_float<T>(0.02f));
  std::vector<T> c(static_cast<size_t>(M * out));
  const double one = median_ms(repeats, [&] {
    zt::cpu::Kernels::gemm(false, true, static_cast<int>(M), out, C, 1.0f, a.data(), C, b.data(), C,
                           0.0f, c.data(), out);
  });
  nlohmann::json cases = nlohmann::json::array();
  for (const bool skewed : {false, true}) {
    std::vector<int64_t> rows(static_cast<size_t>(E));
    const int64_t parts = skewed ? int64_t{E} * (E + 1) / 2 : E;
    int64_t given = 0;
    for (int e = 0; e < E; ++e)
      given += rows[static_cast<size_t>(e)] = M * (skewed ? e + 1 : 1) / parts;
    rows.back() += M - given;
    const double grouped = median_ms(repeats, [&] {
      zt::cpu::Kernels::grouped_gemm(true, rows.data(), E, out, C, 1.0f, a.data(), b.data(), 0.0f,
                                     c.data());
    });
    cases.push_back({{"routing", skewed ? "skewed" : "even"},
                     {"rows", rows},
                     {"grouped_ms", grouped},
                     {"one_gemm_ms", one},
                     {"ratio_one_over_grouped", one / grouped}});
  }
  return cases;
}

int run(int argc, char** argv) {
  int64_t N = 4096;
  int E = 8, K = 2, C = 1024, F = 2816, repeats = 7;
  std::string dtype = "bf16";
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    ZT_REQUIRE(i + 1 < argc, "bench_grouped_gemm: {} needs a value", a);
    const std::string v = argv[i + 1];
    if (a == "--tokens")
      N = std::stoll(v);
    else if (a == "--experts")
      E = std::stoi(v);
    else if (a == "--topk")
      K = std::stoi(v);
    else if (a == "--hidden")
      C = std::stoi(v);
    else if (a == "--ffn")
      F = std::stoi(v);
    else if (a == "--repeats")
      repeats = std::stoi(v);
    else if (a == "--dtype")
      dtype = v;
    else
      ZT_REQUIRE(false, "bench_grouped_gemm: unknown flag {}", a);
  }
  ZT_REQUIRE(N >= 1 && E >= 1 && K >= 1 && K <= E && C >= 1 && F >= 1 && repeats >= 1,
             "bench_grouped_gemm: sizes must be positive and --topk at most --experts");
  ZT_REQUIRE(dtype == "fp32" || dtype == "bf16", "bench_grouped_gemm: --dtype is fp32 or bf16");
  nlohmann::json out = {{"cpu", zt::bench::cpu_info()},
                        {"onednn_isa", zt::cpu::detail::onednn_isa_name()},
                        {"tokens", N},
                        {"experts", E},
                        {"topk", K},
                        {"hidden", C},
                        {"ffn", F},
                        {"dtype", dtype},
                        {"repeats", repeats}};
  out["cases"] = dtype == "fp32" ? run_dtype<float>(N, E, K, C, F, repeats)
                                 : run_dtype<zt::bf16>(N, E, K, C, F, repeats);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
