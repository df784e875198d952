// bench_gemm: GFLOP/s of the GEMMs of one GPT layer (qkv h->3h, proj h->h, fc h->4h, fc2 4h->h),
// each as its forward product and both backward products, for the CPU paths a layer can take:
// fp32 on sgemm and on oneDNN, bf16 on oneDNN, bf16 and fp16 through the convert-and-sgemm
// fallback. Prints one
// JSON object (stdout) and a table (stderr).
//
// For a linear y[T,out] = x[T,in] W[out,in]^T over T tokens:
//   forward  y  = x W^T      M=T   N=out K=in   (NT) beta 0, C in the operands' type
//   dgrad    dx = dy W       M=T   N=in  K=out  (NN) beta 0, C in the operands' type
//   wgrad    dW += dy^T x    M=out N=in  K=T    (TN) beta 1, C fp32 (gradient accumulation)
//
// Usage: bench_gemm [--tokens 2048,4096] [--hidden 512,1024,1792] [--repeats R]
// Each figure is the median of R timed calls (after one untimed call that creates oneDNN's
// primitive and touches the memory); a call that would take under ~20 ms is repeated inside one
// timing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "src/core/half.h"

namespace {

using zt::DType;
using zt::cpu::detail::GemmPath;
using Clock = std::chrono::steady_clock;

struct Variant {
  const char* name;
  DType ab;
  GemmPath path;
};
const Variant kVariants[] = {{"fp32_sgemm", DType::F32, GemmPath::Fallback},
                             {"fp32_onednn", DType::F32, GemmPath::Onednn},
                             {"bf16_onednn", DType::BF16, GemmPath::Onednn},
                             {"bf16_fallback", DType::BF16, GemmPath::Fallback},
                             {"fp16_fallback", DType::F16, GemmPath::Fallback}};

struct Shape {
  std::string gemm, product;
  bool ta, tb;
  int M, N, K;
  float beta;
  bool c_fp32;  // C fp32 even with half operands (wgrad's accumulation)
};

std::vector<Shape> layer_shapes(int T, int h) {
  const std::pair<const char*, std::pair<int, int>> linears[] = {
      {"qkv", {h, 3 * h}}, {"proj", {h, h}}, {"fc", {h, 4 * h}}, {"fc2", {4 * h, h}}};
  std::vector<Shape> s;
  for (const auto& [name, io] : linears) {
    const auto [in, out] = io;
    s.push_back({name, "forward", false, true, T, out, in, 0.0f, false});
    s.push_back({name, "dgrad", false, false, T, in, out, 0.0f, false});
    s.push_back({name, "wgrad", true, false, out, in, T, 1.0f, true});
  }
  return s;
}

// Random bytes of the right type, values in [-1, 1] (a fixed seed: the same data every run).
std::vector<unsigned char> random_matrix(DType t, size_t n, uint32_t seed) {
  std::vector<unsigned char> bytes(n * zt::dtype_size(t));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const float x = d(g);
    if (t == DType::F32) {
      reinterpret_cast<float*>(bytes.data())[i] = x;
    } else if (t == DType::BF16) {
      reinterpret_cast<zt::bf16*>(bytes.data())[i] = zt::to_bf16(x);
    } else {
      reinterpret_cast<zt::fp16*>(bytes.data())[i] = zt::to_fp16(x);
    }
  }
  return bytes;
}

double gflops(const Shape& s, const Variant& v, int repeats) {
  const DType c_type = s.c_fp32 ? DType::F32 : v.ab;
  const int lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N, ldc = s.N;
  const auto A = random_matrix(v.ab, size_t(s.M) * s.K, 1);
  const auto B = random_matrix(v.ab, size_t(s.K) * s.N, 2);
  auto C = random_matrix(c_type, size_t(s.M) * s.N, 3);
  const auto call = [&] {
    zt::cpu::detail::gemm_mixed(v.path, s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(),
                                ldb, s.beta, C.data(), ldc, v.ab, c_type);
  };
  call();
  const double flop = 2.0 * s.M * s.N * s.K;
  const int calls = std::max(1, static_cast<int>(2e9 / flop));
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
  }
  std::sort(t.begin(), t.end());
  return flop / t[t.size() / 2] / 1e9;
}

std::vector<int> int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::stoi(item));
  return v;
}

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

static int run(int argc, char** argv) {
  std::vector<int> tokens{2048, 4096}, hidden{512, 1024, 1792};
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--tokens") {
      tokens = int_list(argv[i + 1]);
    } else if (a == "--hidden") {
      hidden = int_list(argv[i + 1]);
    } else if (a == "--repeats") {
      repeats = std::stoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "bench_gemm: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  const bool onednn = zt::cpu::detail::onednn_bf16_available();
  nlohmann::json out;
  out["threads"] = omp_get_max_threads();
  out["repeats"] = repeats;
  out["onednn_bf16_available"] = onednn;
  out["OPENBLAS_CORETYPE"] = env_or("OPENBLAS_CORETYPE", "(unset)");
  out["OPENBLAS_L2_SIZE"] = env_or("OPENBLAS_L2_SIZE", "(unset)");
  out["results"] = nlohmann::json::array();
  std::fprintf(stderr, "%6s %5s %-5s %-8s %5s %5s %5s |", "tokens", "h", "gemm", "product", "M",
               "N", "K");
  for (const auto& v : kVariants) std::fprintf(stderr, " %14s", v.name);
  std::fprintf(stderr, "   (GFLOP/s)\n");
  for (int T : tokens)
    for (int h : hidden)
      for (const Shape& s : layer_shapes(T, h)) {
        nlohmann::json r = {
            {"tokens", T},     {"hidden", h},    {"gemm", s.gemm},    {"product", s.product},
            {"M", s.M},        {"N", s.N},       {"K", s.K},          {"trans_a", s.ta},
            {"trans_b", s.tb}, {"beta", s.beta}, {"c_fp32", s.c_fp32}};
        std::fprintf(stderr, "%6d %5d %-5s %-8s %5d %5d %5d |", T, h, s.gemm.c_str(),
                     s.product.c_str(), s.M, s.N, s.K);
        for (const auto& v : kVariants) {
          const bool runs = v.ab == DType::F32 ? zt::cpu::detail::onednn_fp32_preferred() : onednn;
          if (v.path == GemmPath::Onednn && !runs) {
            r[v.name] = nullptr;
            std::fprintf(stderr, " %14s", "n/a");
            continue;
          }
          const double g = gflops(s, v, repeats);
          r[v.name] = g;
          std::fprintf(stderr, " %14.1f", g);
        }
        std::fprintf(stderr, "\n");
        out["results"].push_back(r);
      }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
