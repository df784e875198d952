// bench_adamw: the host AdamW step of optimizer offload, Kernels::adamw_multi on fp32 master
// parameters and moments, with fp32, bf16 or fp16 gradients. Prints one JSON object (stdout)
// with each gradient type's per-step times, their median and the bytes it moves per second.
//
// Usage: bench_adamw [--params N] [--tensors T] [--steps S] [--warmup W] [--grads fp32,bf16,fp16]
//   N parameters (default 100M) cut into T segments of (nearly) equal length (default 1), each
//   with weight decay 0.1; W untimed steps (default 2: they fill m and v and fault the pages in),
//   then S timed steps (default 10), each timed alone. Threads: OMP_NUM_THREADS.
//
// Bytes moved per step: the parameters, both moments and the gradients read, and the
// parameters and both moments written: (3 * 4 + 4 + 3 * 4) = 28 bytes per parameter with fp32
// gradients, 26 with half gradients. That is the least any AdamW step must move (bench/
// cpu_adamw.sh uses the same count for PyTorch's).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "src/core/half.h"

namespace {

using Clock = std::chrono::steady_clock;

// A value in [lo, hi) from the element's index (splitmix64): the same data for any thread count,
// written by the threads that later update it.
float hashed(uint64_t i, uint64_t seed, float lo, float hi) {
  uint64_t z = i + seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return lo + (hi - lo) * static_cast<float>(z >> 40) * 0x1p-24f;
}

// n elements, 64-byte aligned as zerotron's host allocator (src/core/memory_pool.cpp) and
// PyTorch's CPU tensors align them, and not written: the first write (the pages' placement) is
// the parallel fill's.
template <typename T>
std::unique_ptr<T[], void (*)(void*)> host_array(int64_t n) {
  constexpr size_t kAlign = 64;
  const size_t bytes = (static_cast<size_t>(n) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  T* p = static_cast<T*>(std::aligned_alloc(kAlign, bytes));
  ZT_CHECK(p != nullptr, "bench_adamw: cannot allocate {} bytes", bytes);
  return {p, std::free};
}

template <typename G>
nlohmann::json run(int64_t n, int tensors, int warmup, int steps) {
  const auto param = host_array<float>(n), m = host_array<float>(n), v = host_array<float>(n);
  const auto grad = host_array<G>(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    param[i] = hashed(i, 1, -0.1f, 0.1f);
    m[i] = v[i] = 0.0f;
    grad[i] = zt::from_float<G>(hashed(i, 2, -0.01f, 0.01f));
  }
  std::vector<zt::AdamWSegment> segs;
  for (int k = 0; k < tensors; ++k) {
    const int64_t lo = n * k / tensors, hi = n * (k + 1) / tensors;
    segs.push_back({param.get() + lo, m.get() + lo, v.get() + lo, grad.get() + lo, hi - lo, 0.1f});
  }
  zt::AdamWParams p;
  p.lr = 1e-3f;
  std::vector<double> t;
  for (int s = 0; s < warmup + steps; ++s) {
    p.step = s + 1;
    const auto t0 = Clock::now();
    zt::cpu::Kernels::adamw_multi<G>(segs.data(), tensors, p);
    if (s >= warmup) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::vector<double> sorted = t;
  std::sort(sorted.begin(), sorted.end());
  const size_t k = sorted.size();
  const double median = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
  const double bytes = static_cast<double>(n) * (6 * sizeof(float) + sizeof(G));
  return {{"median_s", median},
          {"min_s", sorted.front()},
          {"times_s", t},
          {"bytes_per_step", bytes},
          {"gb_per_s", bytes / median / 1e9}};
}

std::vector<std::string> list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(item);
  return v;
}

}  // namespace

static int run(int argc, char** argv) {
  int64_t n = 100'000'000;
  int tensors = 1, steps = 10, warmup = 2;
  std::vector<std::string> grads{"fp32", "bf16", "fp16"};
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    ZT_REQUIRE(i + 1 < argc, "bench_adamw: {} needs a value", a);
    const std::string val = argv[i + 1];
    if (a == "--params") {
      n = std::stoll(val);
    } else if (a == "--tensors") {
      tensors = std::stoi(val);
    } else if (a == "--steps") {
      steps = std::stoi(val);
    } else if (a == "--warmup") {
      warmup = std::stoi(val);
    } else if (a == "--grads") {
      grads = list(val);
    } else {
      ZT_REQUIRE(false, "bench_adamw: unknown flag {}", a);
    }
  }
  ZT_REQUIRE(n >= 1 && tensors >= 1 && tensors <= n && steps >= 1 && warmup >= 0,
             "bench_adamw: need --params >= --tensors >= 1, --steps >= 1, --warmup >= 0");
  nlohmann::json out;
  out["params"] = n;
  out["tensors"] = tensors;
  out["threads"] = omp_get_max_threads();
  out["warmup"] = warmup;
  out["steps"] = steps;
  for (const std::string& g : grads) {
    if (g == "fp32") {
      out[g] = run<float>(n, tensors, warmup, steps);
    } else if (g == "bf16") {
      out[g] = run<zt::bf16>(n, tensors, warmup, steps);
    } else if (g == "fp16") {
      out[g] = run<zt::fp16>(n, tensors, warmup, steps);
    } else {
      ZT_REQUIRE(false, "bench_adamw: --grads takes fp32, bf16 and fp16, not {}", g);
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
