// bench_attention: forward and backward time of one layer's causal attention (the Backend's
// attention_forward / attention_backward, kernels/ops.inc) on the CPU or on a CUDA device.
// Prints one JSON object (stdout).
//
// Usage: bench_attention [--device cpu|cuda] [--dtype fp32,bf16,fp16] [--batch B] [--seq T]
//                        [--heads H] [--kv-heads G] [--head-dim D] [--dropout P] [--repeats R]
// Defaults: cpu, bf16 and fp32, B 4, T 1024, H 16, G = H (multi-head), D 64, P 0, R 5. Each figure
// is the median of R timed calls after one untimed call, with the device synchronised around each
// call (the fastest call is reported too: on a shared machine it is the least disturbed one).
// TFLOP/s counts the causal products only (half of the T x T square): forward 2 GEMMs, backward
// 5 (the recomputed scores, dV, dP, dQ, dK), 2·B·H·(T²/2)·D flops each.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "kernels/backend.h"
#include "src/config/options.h"
#include "src/core/error.h"
#include "src/core/half.h"
#include "src/train/train_device.h"

namespace {

using Clock = std::chrono::steady_clock;
using zt::DType;

struct Args {
  std::string device = "cpu";
  std::vector<std::string> dtypes{"bf16", "fp32"};
  int B = 4, T = 1024, H = 16, G = 0, D = 64, repeats = 5;  // G 0: G = H
  float dropout = 0.0f;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(item);
  return v;
}

int to_int(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const int x = std::stoi(v, &used);
    ZT_REQUIRE(used == v.size() && x > 0, "bench_attention: {} must be a positive integer", flag);
    return x;
  } catch (const std::logic_error&) {
    throw zt::InputError("bench_attention: " + flag + " must be a positive integer, got '" + v +
                         "'");
  }
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string f = argv[i];
    ZT_REQUIRE(i + 1 < argc, "bench_attention: {} needs a value", f);
    const std::string v = argv[i + 1];
    if (f == "--device") {
      a.device = v;
    } else if (f == "--dtype") {
      a.dtypes = split(v);
    } else if (f == "--batch") {
      a.B = to_int(f, v);
    } else if (f == "--seq") {
      a.T = to_int(f, v);
    } else if (f == "--heads") {
      a.H = to_int(f, v);
    } else if (f == "--kv-heads") {
      a.G = to_int(f, v);
    } else if (f == "--head-dim") {
      a.D = to_int(f, v);
    } else if (f == "--repeats") {
      a.repeats = to_int(f, v);
    } else if (f == "--dropout") {
      a.dropout = std::stof(v);
      ZT_REQUIRE(a.dropout >= 0.0f && a.dropout < 1.0f, "bench_attention: --dropout in [0, 1)");
    } else {
      throw zt::InputError("bench_attention: unknown flag " + f);
    }
  }
  ZT_REQUIRE(a.device == "cpu" || a.device == "cuda", "bench_attention: --device cpu or cuda");
  if (a.G == 0) a.G = a.H;
  ZT_REQUIRE(a.H % a.G == 0, "bench_attention: --kv-heads must divide --heads");
  return a;
}

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::F32;
  if (s == "bf16") return DType::BF16;
  if (s == "fp16") return DType::F16;
  throw zt::InputError("bench_attention: --dtype takes fp32, bf16 or fp16, got '" + s + "'");
}

// n random values in [-1, 1] in type t, copied to the device.
zt::Buffer random_buffer(zt::DeviceContext& ctx, DType t, size_t n, uint32_t seed) {
  std::vector<unsigned char> host(n * zt::dtype_size(t));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const float x = d(g);
    if (t == DType::F32) {
      reinterpret_cast<float*>(host.data())[i] = x;
    } else if (t == DType::BF16) {
      reinterpret_cast<zt::bf16*>(host.data())[i] = zt::to_bf16(x);
    } else {
      reinterpret_cast<zt::fp16*>(host.data())[i] = zt::to_fp16(x);
    }
  }
  zt::Buffer b = ctx.pool().allocate(host.size(), zt::MemCategory::Activations);
  ctx.backend().copy_to_device(b.data(), host.data(), host.size());
  return b;
}

struct Times {
  double median, min;
};

template <typename F>
Times time_calls(zt::Backend& be, int repeats, F&& call) {
  call();
  be.synchronize();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    call();
    be.synchronize();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

nlohmann::json bench_one(zt::DeviceContext& ctx, const Args& a, DType t) {
  zt::Backend& be = ctx.backend();
  const int C = a.H * a.D, C3 = C + 2 * a.G * a.D;  // a qkv row: q, then k and v of G heads
  const size_t tokens = size_t(a.B) * a.T, rows = size_t(a.B) * a.H * a.T;
  zt::Buffer qkv = random_buffer(ctx, t, tokens * C3, 1);
  zt::Buffer dout = random_buffer(ctx, t, tokens * C, 2);
  zt::Buffer out =
      ctx.pool().allocate(tokens * C * zt::dtype_size(t), zt::MemCategory::Activations);
  zt::Buffer dqkv =
      ctx.pool().allocate(tokens * C3 * zt::dtype_size(t), zt::MemCategory::Activations);
  zt::Buffer lse = ctx.pool().allocate(rows * sizeof(float), zt::MemCategory::Activations);
  zt::Buffer delta = ctx.pool().allocate(rows * sizeof(float), zt::MemCategory::Activations);
  const zt::DropoutParams drop{a.dropout, 7, 0};
  const zt::Ref o{out.data(), t}, g{dqkv.data(), t};
  const zt::CRef q{qkv.data(), t}, dy{dout.data(), t};
  auto* l = static_cast<float*>(lse.data());
  auto* dl = static_cast<float*>(delta.data());
  const Times tf = time_calls(be, a.repeats,
                              [&] { be.attention_forward(o, l, q, a.B, a.T, C, a.H, a.G, drop); });
  const Times tb = time_calls(be, a.repeats, [&] {
    be.attention_backward(g, dl, dy, q, o, l, a.B, a.T, C, a.H, a.G, drop);
  });
  const double fwd = tf.median, bwd = tb.median;
  const double gemm = 2.0 * a.B * a.H * (double(a.T) * a.T / 2) * a.D;
  nlohmann::json r;
  r["dtype"] = zt::dtype_name(t);
  r["forward_ms"] = fwd * 1e3;
  r["backward_ms"] = bwd * 1e3;
  r["fwd_bwd_ms"] = (fwd + bwd) * 1e3;
  r["forward_min_ms"] = tf.min * 1e3;
  r["backward_min_ms"] = tb.min * 1e3;
  r["forward_tflops"] = 2 * gemm / fwd / 1e12;
  r["backward_tflops"] = 5 * gemm / bwd / 1e12;
  r["fwd_bwd_tflops"] = 7 * gemm / (fwd + bwd) / 1e12;
  return r;
}

}  // namespace

static int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::vector<DType> types;
  for (const auto& s : a.dtypes) types.push_back(parse_dtype(s));
  zt::TrainOptions o;
  o.device = a.device;
  zt::TrainDevice dev(o, nullptr);
  zt::DeviceContext ctx = dev.context();
  nlohmann::json j;
  j["bench"] = "attention";
  j["device"] = a.device;
  j["device_name"] = dev.device_name();
  j["cpu_threads"] = omp_get_max_threads();
  j["batch"] = a.B;
  j["seq"] = a.T;
  j["heads"] = a.H;
  j["kv_heads"] = a.G;
  j["head_dim"] = a.D;
  j["dropout"] = a.dropout;
  j["repeats"] = a.repeats;
  j["results"] = nlohmann::json::array();
  for (DType t : types) j["results"].push_back(bench_one(ctx, a, t));
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
