// bench_calibrate: measures what `zerotron simulate` needs to model this machine as a cluster
// (one "node" whose ranks share the cores) and prints one JSON object usable as
// `zerotron simulate --calibrate FILE`: the sgemm rate over a grid of GEMM shapes fitted to the
// simulator's efficiency model rate = peak · m/(m+s) · n/(n+s) · k/(k+s) (peak and s fitted by
// least squares in log space), the memory bandwidth of a streaming triad, and — passed in from
// bench_collectives by examples/scaling/calibrate_cpu.sh — the all-reduce bus bandwidth and
// latency between ranks.
//
// Usage: bench_calibrate [--intra-node-gbps G] [--intra-node-latency-us U] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "kernels/cpu/ops.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Sample {
  int m, n, k;
  double gflops;
};

double gemm_gflops(int m, int n, int k, int repeats) {
  std::vector<float> a(size_t(m) * k, 0.01f), b(size_t(k) * n, 0.02f), c(size_t(m) * n, 0.0f);
  zt::cpu::gemm(false, true, m, n, k, 1, a.data(), k, b.data(), k, 0, c.data(), n);  // warm up
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    // Enough calls that one measurement lasts a few milliseconds.
    const int calls = std::max(1, static_cast<int>(2e8 / (2.0 * m * n * k)));
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      zt::cpu::gemm(false, true, m, n, k, 1, a.data(), k, b.data(), k, 0, c.data(), n);
    t.push_back(seconds_since(t0) / calls);
  }
  std::sort(t.begin(), t.end());
  return 2.0 * m * n * k / t[t.size() / 2] / 1e9;
}

double triad_gbps(int repeats) {
  const size_t n = size_t{1} << 25;  // 3 arrays of 128 MiB: far beyond the caches
  std::vector<float> a(n, 1), b(n, 2), c(n, 3);
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return 3.0 * n * sizeof(float) / t[t.size() / 2] / 1e9;
}

double u(double x, double s) {
  return x / (x + s);
}

}  // namespace

static int run(int argc, char** argv) {
  double intra_gbps = 0, intra_latency_us = 0;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--intra-node-gbps")
      intra_gbps = std::stod(argv[i + 1]);
    else if (a == "--intra-node-latency-us")
      intra_latency_us = std::stod(argv[i + 1]);
    else if (a == "--repeats")
      repeats = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_calibrate: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  std::vector<Sample> samples;
  for (int m : {64, 256, 1024, 2048})
    for (int n : {64, 256, 768, 2048})
      for (int k : {64, 256, 1024}) samples.push_back({m, n, k, gemm_gflops(m, n, k, repeats)});
  // Fit s on a log grid; for each s the best log(peak) is the mean residual.
  double best_err = -1, best_s = 0, best_peak = 0;
  for (double s = 1; s <= 4096; s *= 1.05) {
    double mean = 0;
    for (const auto& x : samples)
      mean += std::log(x.gflops) - std::log(u(x.m, s) * u(x.n, s) * u(x.k, s));
    mean /= static_cast<double>(samples.size());
    double err = 0;
    for (const auto& x : samples) {
      const double r = std::log(x.gflops) - std::log(u(x.m, s) * u(x.n, s) * u(x.k, s)) - mean;
      err += r * r;
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      best_s = s;
      best_peak = std::exp(mean);
    }
  }
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& x : samples)
    grid.push_back(
        {{"m", x.m},
         {"n", x.n},
         {"k", x.k},
         {"gflops", x.gflops},
         {"fitted_gflops", best_peak * u(x.m, best_s) * u(x.n, best_s) * u(x.k, best_s)}});
  const double rms_log = std::sqrt(best_err / static_cast<double>(samples.size()));
  nlohmann::json cluster = {{"name", "cpu-local"},
                            {"gpus_per_node", 64},
                            {"nodes", 1},
                            {"peak_tflops", best_peak / 1e3},
                            {"gemm_efficiency", 1.0},
                            {"gemm_half_dim", best_s},
                            {"hbm_gbps", triad_gbps(repeats)},
                            {"kernel_overhead_us", 0.0},
                            {"shared_compute", true}};
  if (intra_gbps > 0) cluster["intra_node_gbps"] = intra_gbps;
  if (intra_latency_us > 0) cluster["intra_node_latency_us"] = intra_latency_us;
  const nlohmann::json j = {{"bench", "calibrate"},
                            {"cluster", cluster},
                            {"gemm_fit_rms_log_error", rms_log},
                            {"gemm_samples", grid}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
