// bench_calibrate: measures, on the machine at hand and with every rank of the job busy at once
// (as in training: on a CPU the ranks share the cores), what `zerotron simulate` needs to model
// it, and prints one cluster description (JSON) for `zerotron simulate --cluster FILE`:
//   gemm_table        the backend's linear_forward and linear_backward for the model's own GEMM
//                     shapes (qkv, projection, fc1, fc2, head; per tensor-parallel size), by dtype
//   attention_table   attention_forward / attention_backward at the model's (batch, heads/tp,
//                     seq, head dim), by dtype
//   elementwise_table a layer's memory-bound kernels per [N, hidden] element (forward: layernorm,
//                     dropout+residual+layernorm, dropout+residual, GeLU; backward: 2 layernorm
//                     backwards, GeLU backward, 2 dropout backwards, 2 residual adds), the
//                     cross-entropy per logit and AdamW (with the half copy's cast) per parameter
//   comm_table        all_reduce, reduce_scatter, all_gather (nccl-tests sizes) over the whole
//                     job and over pairs, in fp32 and the half type (the CPU widens half
//                     reductions), p2p between pairs, and host memcpy, by size
// plus the fallbacks of the closed-form model (peak_tflops, hbm_gbps from a triad,
// intra_node_gbps from the largest all-reduce). No training step is timed.
//
// Usage: launch/mpirun.sh -np N build/bin/bench_calibrate --hidden H --heads A --seq S
//        --vocab V --micro-batch B [--tp 1,2] [--dtypes fp32,bf16] [--dropout P]
//        [--max-bytes 16777216] [--repeats R] [--passes P]
// Compute samples: the median over P sweeps (3) of the median of R windows (3) each; collectives:
// the median of R windows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "kernels/backend.h"
#include "src/comm/runtime.h"
#include "src/config/options.h"
#include "src/core/error.h"
#include "src/train/train_device.h"

namespace {

using Clock = std::chrono::steady_clock;
using zt::DType;
using zt::comm::Communicator;

struct Args {
  int hidden = 256, heads = 8, seq = 256, vocab = 4096, micro_batch = 4, repeats = 3, passes = 3;
  std::vector<int> tp{1, 2};
  std::vector<std::string> dtypes{"fp32", "bf16"};
  float dropout = 0.1f;
  size_t max_bytes = 16u << 20;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(item);
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string f = argv[i];
    ZT_REQUIRE(i + 1 < argc, "bench_calibrate: {} needs a value", f);
    const std::string v = argv[i + 1];
    if (f == "--hidden")
      a.hidden = std::stoi(v);
    else if (f == "--heads")
      a.heads = std::stoi(v);
    else if (f == "--seq")
      a.seq = std::stoi(v);
    else if (f == "--vocab")
      a.vocab = std::stoi(v);
    else if (f == "--micro-batch")
      a.micro_batch = std::stoi(v);
    else if (f == "--repeats")
      a.repeats = std::stoi(v);
    else if (f == "--passes")
      a.passes = std::stoi(v);
    else if (f == "--dropout")
      a.dropout = std::stof(v);
    else if (f == "--max-bytes")
      a.max_bytes = std::stoull(v);
    else if (f == "--tp") {
      a.tp.clear();
      for (const auto& x : split(v)) a.tp.push_back(std::stoi(x));
    } else if (f == "--dtypes")
      a.dtypes = split(v);
    else
      throw zt::InputError("bench_calibrate: unknown flag " + f);
  }
  ZT_REQUIRE(a.hidden > 0 && a.heads > 0 && a.seq > 0 && a.vocab > 0 && a.micro_batch > 0 &&
                 a.repeats > 0 && a.passes > 0 && a.hidden % a.heads == 0,
             "bench_calibrate: sizes must be positive and --hidden a multiple of --heads");
  return a;
}

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::F32;
  if (s == "bf16") return DType::BF16;
  if (s == "fp16") return DType::F16;
  throw zt::InputError("bench_calibrate: --dtypes takes fp32, bf16 or fp16, got '" + s + "'");
}

// Seconds per call of `op` with every rank running it at once: from a barrier before to a
// barrier after (so ranks that the scheduler runs one after another on shared cores count as
// such), each measurement repeating the call until it lasts about 80 ms; the median of
// `repeats` measurements.
template <typename F>
double timed(Communicator& world, int repeats, F&& op) {
  auto span = [&](int calls) {
    world.barrier();
    const auto t0 = Clock::now();
    for (int c = 0; c < calls; ++c) op();
    world.barrier();
    float s = static_cast<float>(std::chrono::duration<double>(Clock::now() - t0).count());
    world.all_reduce(zt::Tensor(&s, zt::Shape{1}, DType::F32), zt::comm::ReduceOp::Max);
    return static_cast<double>(s);
  };
  op();
  const int calls = std::clamp(static_cast<int>(0.08 / std::max(span(1), 1e-7)), 1, 2000);
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) t.push_back(span(calls) / calls);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// A device buffer of n elements of t, filled with small values.
zt::Buffer filled(zt::DeviceContext& ctx, DType t, size_t n) {
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = 0.01f * static_cast<float>((i * 7919) % 200) - 1.0f;
  std::vector<unsigned char> host(n * zt::dtype_size(t));
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32)
      reinterpret_cast<float*>(host.data())[i] = f[i];
    else if (t == DType::BF16)
      reinterpret_cast<zt::bf16*>(host.data())[i] = zt::to_bf16(f[i]);
    else
      reinterpret_cast<zt::fp16*>(host.data())[i] = zt::to_fp16(f[i]);
  }
  zt::Buffer b = ctx.pool().allocate(host.size() + 64, zt::MemCategory::Activations);
  ctx.backend().copy_to_device(b.data(), host.data(), host.size());
  return b;
}

zt::Buffer floats(zt::DeviceContext& ctx, size_t n) {
  return filled(ctx, DType::F32, n);
}

struct Linear {
  const char* name;
  int in, out;
};

void gemms(zt::DeviceContext& ctx, Communicator& world, const Args& a, DType t,
           nlohmann::json& table) {
  zt::Backend& be = ctx.backend();
  const int N = a.micro_batch * a.seq, h = a.hidden;
  for (int tp : a.tp) {
    const int vocab = (a.vocab + 128 * tp - 1) / (128 * tp) * (128 * tp);
    const Linear shapes[] = {{"qkv", h, 3 * h / tp},
                             {"proj", h / tp, h},
                             {"fc1", h, 4 * h / tp},
                             {"fc2", 4 * h / tp, h},
                             {"head", h, vocab / tp}};
    for (const Linear& s : shapes) {
      zt::Buffer x = filled(ctx, t, size_t(N) * s.in), w = filled(ctx, t, size_t(s.out) * s.in);
      zt::Buffer b = filled(ctx, t, size_t(s.out)), y = filled(ctx, t, size_t(N) * s.out);
      zt::Buffer dx = filled(ctx, t, size_t(N) * s.in);
      zt::Buffer dw = floats(ctx, size_t(s.out) * s.in), db = floats(ctx, size_t(s.out));
      const zt::CRef bias{s.name == std::string("head") ? nullptr : b.data(), t};
      const double f = timed(world, a.repeats, [&] {
        be.linear_forward(zt::Ref{y.data(), t}, zt::CRef{x.data(), t}, zt::CRef{w.data(), t}, bias,
                          N, s.in, s.out);
      });
      const double bw = timed(world, a.repeats, [&] {
        be.linear_backward(zt::Ref{dx.data(), t}, static_cast<float*>(dw.data()),
                           s.name == std::string("head") ? nullptr : static_cast<float*>(db.data()),
                           zt::CRef{y.data(), t}, zt::CRef{x.data(), t}, zt::CRef{w.data(), t}, N,
                           s.in, s.out, false);
      });
      const double flops = 2.0 * N * s.in * s.out;
      for (auto [pass, secs, fl] :
           {std::tuple{"fwd", f, flops}, std::tuple{"linear_bwd", bw, 2 * flops}})
        table.push_back({{"dtype", zt::dtype_name(t)},
                         {"pass", pass},
                         {"layer", s.name},
                         {"tp", tp},
                         {"m", N},
                         {"n", s.out},
                         {"k", s.in},
                         {"gflops", fl / secs / 1e9}});
    }
  }
}

void attention(zt::DeviceContext& ctx, Communicator& world, const Args& a, DType t,
               nlohmann::json& table) {
  zt::Backend& be = ctx.backend();
  for (int tp : a.tp) {
    const int NH = a.heads / tp, C = a.hidden / tp, B = a.micro_batch, T = a.seq;
    const size_t tokens = size_t(B) * T, rows = size_t(B) * NH * T;
    zt::Buffer qkv = filled(ctx, t, tokens * 3 * C), dout = filled(ctx, t, tokens * C);
    zt::Buffer out = filled(ctx, t, tokens * C), dqkv = filled(ctx, t, tokens * 3 * C);
    zt::Buffer lse = floats(ctx, rows), delta = floats(ctx, rows);
    const zt::DropoutParams drop{a.dropout, 7, 0};
    const double f = timed(world, a.repeats, [&] {
      be.attention_forward(zt::Ref{out.data(), t}, static_cast<float*>(lse.data()),
                           zt::CRef{qkv.data(), t}, B, T, C, NH, NH, drop);
    });
    const double b = timed(world, a.repeats, [&] {
      be.attention_backward(zt::Ref{dqkv.data(), t}, static_cast<float*>(delta.data()),
                            zt::CRef{dout.data(), t}, zt::CRef{qkv.data(), t},
                            zt::CRef{out.data(), t}, static_cast<const float*>(lse.data()), B, T, C,
                            NH, NH, drop);
    });
    table.push_back({{"dtype", zt::dtype_name(t)},
                     {"batch", B},
                     {"heads", NH},
                     {"seq", T},
                     {"head_dim", a.hidden / a.heads},
                     {"forward_ms", f * 1e3},
                     {"backward_ms", b * 1e3}});
  }
}

void elementwise(zt::DeviceContext& ctx, Communicator& world, const Args& a, DType t,
                 nlohmann::json& table) {
  zt::Backend& be = ctx.backend();
  const int N = a.micro_batch * a.seq, h = a.hidden;
  const int64_t nh = int64_t(N) * h;
  zt::Buffer x = filled(ctx, t, size_t(nh)), y = filled(ctx, t, size_t(nh)),
             r = filled(ctx, t, size_t(nh)), dx = filled(ctx, t, size_t(nh));
  zt::Buffer x4 = filled(ctx, t, size_t(4 * nh)), y4 = filled(ctx, t, size_t(4 * nh));
  zt::Buffer w = filled(ctx, t, size_t(h)), b = filled(ctx, t, size_t(h));
  zt::Buffer mean = floats(ctx, size_t(N)), rstd = floats(ctx, size_t(N));
  zt::Buffer dw = floats(ctx, size_t(h)), db = floats(ctx, size_t(h));
  const zt::DropoutParams drop{a.dropout, 7, 0};
  auto R = [&](zt::Buffer& q) { return zt::Ref{q.data(), t}; };
  auto CR = [&](zt::Buffer& q) { return zt::CRef{q.data(), t}; };
  auto* mu = static_cast<float*>(mean.data());
  auto* rs = static_cast<float*>(rstd.data());
  const double fwd = timed(world, a.repeats, [&] {
    be.layernorm_forward(R(y), mu, rs, CR(x), CR(w), CR(b), N, h);
    be.dropout_add_layernorm_forward(R(r), R(y), mu, rs, CR(x), CR(dx), CR(w), CR(b), N, h, drop);
    be.dropout_add_forward(R(r), CR(x), CR(y), nh, drop);
    be.gelu_forward(R(y4), CR(x4), 4 * nh);
  });
  const double bwd = timed(world, a.repeats, [&] {
    for (int i = 0; i < 2; ++i) {
      be.layernorm_backward(R(dx), static_cast<float*>(dw.data()), static_cast<float*>(db.data()),
                            CR(y), CR(x), CR(w), mu, rs, N, h);
      be.dropout_backward(R(r), CR(y), nh, drop);
      be.add_inplace(R(dx), CR(r), nh);
    }
    be.gelu_backward(R(y4), CR(x4), CR(y4), 4 * nh);
  });
  table.push_back(
      {{"dtype", zt::dtype_name(t)}, {"kernel", "layer_fwd"}, {"ns_per_elem", fwd / nh * 1e9}});
  table.push_back(
      {{"dtype", zt::dtype_name(t)}, {"kernel", "layer_bwd"}, {"ns_per_elem", bwd / nh * 1e9}});
  // Cross-entropy over [N, V] logits (the head's output, one tp rank at tp 1).
  const int V = (a.vocab + 127) / 128 * 128;
  zt::Buffer logits = filled(ctx, t, size_t(N) * V), losses = floats(ctx, size_t(N));
  std::vector<int32_t> targets_host(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) targets_host[size_t(i)] = (i * 31) % a.vocab;
  zt::Buffer targets = ctx.pool().allocate(size_t(N) * 4, zt::MemCategory::Activations);
  be.copy_to_device(targets.data(), targets_host.data(), size_t(N) * 4);
  const double ce = timed(world, a.repeats, [&] {
    be.softmax_cross_entropy(R(logits), static_cast<float*>(losses.data()),
                             static_cast<const int32_t*>(targets.data()), N, V, a.vocab, 1.0f);
  });
  table.push_back({{"dtype", zt::dtype_name(t)},
                   {"kernel", "cross_entropy"},
                   {"ns_per_elem", ce / (double(N) * V) * 1e9}});
  // AdamW on fp32 masters; half runs also round the updated master into the working copy.
  const int64_t n = int64_t{1} << 20;
  zt::Buffer p = floats(ctx, size_t(n)), m = floats(ctx, size_t(n)), v = floats(ctx, size_t(n)),
             g = floats(ctx, size_t(n));
  zt::Buffer half = filled(ctx, DType::BF16, size_t(n));
  zt::AdamWParams ap;
  ap.lr = 1e-4f;
  const double adam = timed(world, a.repeats, [&] {
    be.adamw(static_cast<float*>(p.data()), static_cast<float*>(m.data()),
             static_cast<float*>(v.data()), static_cast<const float*>(g.data()), n, ap);
    if (t != DType::F32)
      be.cast(static_cast<zt::bf16*>(half.data()), static_cast<const float*>(p.data()), n);
  });
  table.push_back(
      {{"dtype", zt::dtype_name(t)}, {"kernel", "adamw"}, {"ns_per_elem", adam / double(n) * 1e9}});
}

void collectives(zt::comm::MpiRuntime& rt, Communicator& world, zt::MemoryPool& pool, const Args& a,
                 const std::vector<DType>& types, nlohmann::json& table, double* busbw) {
  const int W = world.size();
  std::vector<std::unique_ptr<Communicator>> groups;
  groups.push_back(world.split(0, world.rank(), zt::comm::GroupKind::Dp));
  if (W > 2 && W % 2 == 0)
    groups.push_back(world.split(world.rank() / 2, world.rank(), zt::comm::GroupKind::Dp));
  zt::Buffer A = pool.allocate(a.max_bytes + 64, zt::MemCategory::Buffers);
  zt::Buffer B = pool.allocate(a.max_bytes + 64, zt::MemCategory::Buffers);
  for (auto& g : groups) {
    const int N = g->size();
    for (DType t : types) {
      const size_t e = zt::dtype_size(t);
      const std::string suffix = t == DType::F32 ? "" : ":" + std::string(zt::dtype_name(t));
      for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"}) {
        for (size_t bytes = 1024; bytes <= a.max_bytes; bytes *= 4) {
          const int64_t count = std::max<int64_t>(int64_t(bytes / e) / N * N, N);
          zt::Tensor full = A.view(zt::Shape{count}, t), part = B.view(zt::Shape{count / N}, t);
          const int reps = a.repeats;
          double s = 0;
          if (op == std::string("all_reduce"))
            s = timed(world, reps, [&] { g->all_reduce(full); });
          else if (op == std::string("reduce_scatter"))
            s = timed(world, reps, [&] { g->reduce_scatter(full, part); });
          else
            s = timed(world, reps, [&] { g->all_gather(part, full); });
          const double size = double(count) * double(e);
          table.push_back(
              {{"op", std::string(op) + suffix}, {"group", N}, {"bytes", size}, {"us", s * 1e6}});
          if (op == std::string("all_reduce") && t == DType::F32 && N == W)
            *busbw = size / s / 1e9 * 2.0 * (N - 1) / N;
        }
      }
    }
  }
  // Point-to-point: even ranks send to the next odd one, all pairs at once.
  if (W >= 2 && W % 2 == 0) {
    const int peer = world.rank() ^ 1;
    for (size_t bytes = 1024; bytes <= a.max_bytes; bytes *= 4) {
      zt::Tensor buf = A.view(zt::Shape{int64_t(bytes / 4)}, DType::F32);
      const double s = timed(world, a.repeats, [&] {
        if (world.rank() % 2 == 0)
          world.send(buf, peer, 5);
        else
          world.recv(buf, peer, 5);
      });
      table.push_back({{"op", "p2p"}, {"group", 2}, {"bytes", double(bytes)}, {"us", s * 1e6}});
    }
  }
  // Host copies (every rank at once).
  for (size_t bytes = 1024; bytes <= a.max_bytes; bytes *= 4) {
    const double s = timed(world, a.repeats, [&] { std::memcpy(B.data(), A.data(), bytes); });
    table.push_back({{"op", "memcpy"}, {"group", 1}, {"bytes", double(bytes)}, {"us", s * 1e6}});
  }
  (void)rt;
}

double triad_gbps(Communicator& world, int repeats) {
  const size_t n = size_t{1} << 23;
  std::vector<float> a(n, 1), b(n, 2), c(n, 3);
  const double s = timed(world, repeats, [&] {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
  });
  return 3.0 * n * sizeof(float) / s / 1e9;
}

// The first pass's entries with `fields` replaced by their median over the passes.
nlohmann::json median_of(const std::vector<nlohmann::json>& passes,
                         std::initializer_list<const char*> fields) {
  nlohmann::json out = passes.front();
  for (size_t i = 0; i < out.size(); ++i)
    for (const char* f : fields) {
      std::vector<double> v;
      for (const auto& p : passes) v.push_back(p.at(i).at(f).get<double>());
      std::sort(v.begin(), v.end());
      out[i][f] = v[v.size() / 2];
    }
  return out;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

static int run(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    const Args a = parse(argc, argv);
    std::vector<DType> types;
    for (const auto& s : a.dtypes) types.push_back(parse_dtype(s));
    zt::TrainOptions o;
    o.device = "cpu";
    zt::TrainDevice dev(o, nullptr);
    zt::DeviceContext ctx = dev.context();
    auto world = rt.world(ctx.pool());
    nlohmann::json gemm = nlohmann::json::array(), attn = nlohmann::json::array(),
                   ew = nlohmann::json::array(), comm = nlohmann::json::array();
    // The compute samples in `passes` sweeps over all of them, each sample's value the median
    // over the sweeps: a load spike on a shared machine then disturbs one sweep of every sample
    // rather than every window of a few.
    std::vector<nlohmann::json> g_passes, a_passes, e_passes;
    for (int p = 0; p < a.passes; ++p) {
      nlohmann::json g = nlohmann::json::array(), at = nlohmann::json::array(),
                     e = nlohmann::json::array();
      for (DType t : types) {
        gemms(ctx, *world, a, t, g);
        attention(ctx, *world, a, t, at);
        elementwise(ctx, *world, a, t, e);
      }
      g_passes.push_back(g);
      a_passes.push_back(at);
      e_passes.push_back(e);
    }
    gemm = median_of(g_passes, {"gflops"});
    attn = median_of(a_passes, {"forward_ms", "backward_ms"});
    ew = median_of(e_passes, {"ns_per_elem"});
    double busbw = 0;
    collectives(rt, *world, ctx.pool(), a, types, comm, &busbw);
    const double hbm = triad_gbps(*world, a.repeats);
    double peak = 0;
    for (const auto& g : gemm) peak = std::max(peak, g.at("gflops").get<double>() / 1e3);
    if (rt.rank() == 0) {
      nlohmann::json cluster = {
          {"name", "cpu-local (calibrated)"},
          {"gpus_per_node", world->size()},
          {"nodes", 1},
          {"peak_tflops", peak},
          {"gemm_efficiency", 1.0},
          {"gemm_half_dim", 1.0},
          {"hbm_gbps", hbm},
          {"intra_node_gbps", busbw > 0 ? busbw : 1.0},
          {"intra_node_latency_us", 1.0},
          {"kernel_overhead_us", 0.0},
          {"shared_compute", false},
          {"comm_overlaps_compute", false},
          {"shared_core_speedup", std::max(1.0, double(world->size()) * omp_get_max_threads() /
                                                    std::thread::hardware_concurrency())},
          {"gemm_table", gemm},
          {"attention_table", attn},
          {"elementwise_table", ew},
          {"comm_table", comm}};
      const nlohmann::json j = {{"bench", "calibrate"},
                                {"ranks", world->size()},
                                {"cpu_model", cpu_model()},
                                {"cluster", cluster}};
      std::printf("%s\n", j.dump().c_str());
    }
    world.reset();
    return 0;
  });
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
