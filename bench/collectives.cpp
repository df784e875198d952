// bench_collectives: nccl-tests-style sweep of all_reduce, reduce_scatter and all_gather over
// the MpiCommunicator, one JSON object per line.
//   launch/mpirun.sh -np 4 build/bin/bench_collectives [--min-bytes 8] [--max-bytes 67108864]
//       [--dtype fp32|bf16|fp16] [--ops all_reduce,reduce_scatter,all_gather] [--overlap]
// size_bytes follows nccl-tests: the all-reduce buffer, the reduce-scatter input, the
// all-gather output. time_us is the median over iterations of the slowest rank's time;
// algbw = size / time; busbw = algbw × 2(N−1)/N (all_reduce) or (N−1)/N (the other two).
//
// --overlap measures how much of an async all-reduce hides behind compute, for each progress
// mode: a compute-bound loop as long as the all-reduce runs while the all-reduce is in flight;
// hidden_fraction = (t_comm + t_compute − t_together) / t_comm.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "src/comm/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;
using zt::comm::Communicator;

double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Opts {
  size_t min_bytes = 8, max_bytes = 64u << 20;
  zt::DType dtype = zt::DType::F32;
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather"};
  bool overlap = false;
};

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      ZT_REQUIRE(i + 1 < argc, "{} needs a value", a);
      return argv[++i];
    };
    if (a == "--min-bytes") {
      o.min_bytes = std::stoull(next());
    } else if (a == "--max-bytes") {
      o.max_bytes = std::stoull(next());
    } else if (a == "--dtype") {
      const std::string d = next();
      o.dtype = d == "bf16" ? zt::DType::BF16 : d == "fp16" ? zt::DType::F16 : zt::DType::F32;
    } else if (a == "--ops") {
      o.ops.clear();
      std::string s = next();
      size_t p = 0;
      while (p <= s.size()) {
        const size_t q = std::min(s.find(',', p), s.size());
        o.ops.push_back(s.substr(p, q - p));
        p = q + 1;
      }
    } else if (a == "--overlap") {
      o.overlap = true;
    } else {
      throw zt::InputError("bench_collectives: unknown option " + a);
    }
  }
  return o;
}

// Median over iterations of the slowest rank's time for `op()`.
template <typename F>
double median_time(Communicator& world, size_t bytes, F&& op) {
  const int iters = bytes <= (1u << 20) ? 40 : bytes <= (16u << 20) ? 12 : 6;
  for (int w = 0; w < 3; ++w) op();
  std::vector<float> t(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    world.barrier();
    const double t0 = now_s();
    op();
    t[static_cast<size_t>(i)] = static_cast<float>(now_s() - t0);
  }
  world.all_reduce(zt::Tensor(t.data(), zt::Shape{iters}, zt::DType::F32), zt::comm::ReduceOp::Max);
  std::nth_element(t.begin(), t.begin() + iters / 2, t.end());
  return t[static_cast<size_t>(iters / 2)];
}

void sweep(zt::comm::MpiRuntime& rt, Communicator& world, zt::MemoryPool& pool, const Opts& o) {
  const int N = world.size();
  const size_t e = zt::dtype_size(o.dtype);
  zt::Buffer a = pool.allocate(o.max_bytes + 64, zt::MemCategory::Buffers);
  zt::Buffer b = pool.allocate(o.max_bytes + 64, zt::MemCategory::Buffers);
  for (const std::string& name : o.ops) {
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
      // Round to a count every rank divides evenly.
      const int64_t count = std::max<int64_t>(static_cast<int64_t>(bytes / e) / N * N, N);
      const size_t size = static_cast<size_t>(count) * e;
      const int64_t chunk = count / N;
      zt::Tensor full = a.view(zt::Shape{count}, o.dtype);
      zt::Tensor part = b.view(zt::Shape{chunk}, o.dtype);
      double t = 0, factor = 1;
      if (name == "all_reduce") {
        t = median_time(world, size, [&] { world.all_reduce(full); });
        factor = 2.0 * (N - 1) / N;
      } else if (name == "reduce_scatter") {
        t = median_time(world, size, [&] { world.reduce_scatter(full, part); });
        factor = static_cast<double>(N - 1) / N;
      } else if (name == "all_gather") {
        t = median_time(world, size, [&] { world.all_gather(part, full); });
        factor = static_cast<double>(N - 1) / N;
      } else {
        throw zt::InputError("bench_collectives: unknown op " + name);
      }
      const double algbw = static_cast<double>(size) / t / 1e9;
      if (rt.rank() == 0)
        std::printf(
            "{\"bench\":\"collectives\",\"op\":\"%s\",\"dtype\":\"%s\",\"ranks\":%d,"
            "\"size_bytes\":%zu,\"count\":%lld,\"time_us\":%.2f,\"algbw_gbps\":%.4f,"
            "\"busbw_gbps\":%.4f}\n",
            name.c_str(), std::string(zt::dtype_name(o.dtype)).c_str(), N, size,
            static_cast<long long>(count), t * 1e6, algbw, algbw * factor);
      std::fflush(stdout);
    }
  }
}

// A compute-bound loop (no memory traffic): `reps` rounds over a 256-float register-sized array.
float compute(int64_t reps) {
  float x[256];
  for (int i = 0; i < 256; ++i) x[i] = 1.0f + static_cast<float>(i) * 1e-6f;
  for (int64_t r = 0; r < reps; ++r)
    for (int i = 0; i < 256; ++i) x[i] = x[i] * 0.999999f + 1e-7f;
  float s = 0;
  for (float v : x) s += v;
  return s;
}

volatile float g_sink = 0;

void overlap(zt::comm::MpiRuntime& rt, Communicator& world, zt::MemoryPool& pool) {
  auto& prog = rt.progress();
  const auto saved_mode = prog.mode();
  const int saved_poll = prog.poll_interval_us();
  // Calibrate the compute loop: reps per second.
  double t0 = now_s();
  g_sink = compute(20000);
  const double reps_per_s = 20000 / (now_s() - t0);
  for (size_t bytes : {size_t{1} << 20, size_t{4} << 20, size_t{16} << 20, size_t{64} << 20}) {
    const int64_t n = static_cast<int64_t>(bytes / 4);
    zt::Buffer buf = pool.allocate(bytes, zt::MemCategory::Buffers);
    zt::Tensor t = buf.view(zt::Shape{n}, zt::DType::F32);
    const double t_comm = median_time(world, bytes, [&] { world.all_reduce(t); });
    // Size the compute to the all-reduce's time (re-measured once: calibration is noisy).
    int64_t reps = std::max<int64_t>(1, static_cast<int64_t>(t_comm * reps_per_s));
    double t_comp = median_time(world, bytes, [&] { g_sink = compute(reps); });
    reps = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(reps) * t_comm / t_comp));
    // Every rank must use the same count (the slowest rank's).
    float r = static_cast<float>(reps);
    world.all_reduce(zt::Tensor(&r, zt::Shape{1}, zt::DType::F32), zt::comm::ReduceOp::Max);
    reps = static_cast<int64_t>(r);
    t_comp = median_time(world, bytes, [&] { g_sink = compute(reps); });
    struct Mode {
      const char* name;
      zt::comm::ProgressMode mode;
      int poll_us;
      int chunks;  // manual: progress() calls spread over the compute
    };
    const Mode modes[] = {{"none", zt::comm::ProgressMode::Manual, 0, 1},
                          {"manual16", zt::comm::ProgressMode::Manual, 0, 16},
                          {"manual64", zt::comm::ProgressMode::Manual, 0, 64},
                          {"thread", zt::comm::ProgressMode::Thread, 0, 1},
                          {"thread", zt::comm::ProgressMode::Thread, 20, 1},
                          {"thread", zt::comm::ProgressMode::Thread, 100, 1}};
    for (const Mode& m : modes) {
      if (m.mode == zt::comm::ProgressMode::Thread && !rt.thread_multiple()) continue;
      prog.set_mode(m.mode);
      prog.set_poll_interval_us(m.poll_us);
      const double t_both = median_time(world, bytes, [&] {
        zt::comm::Handle h = world.all_reduce_async(t);
        for (int c = 0; c < m.chunks; ++c) {
          g_sink = compute(reps / m.chunks);
          if (m.chunks > 1) world.progress();
        }
        h.wait();
      });
      const double hidden = std::clamp((t_comm + t_comp - t_both) / t_comm, 0.0, 1.0);
      if (rt.rank() == 0)
        std::printf(
            "{\"bench\":\"overlap\",\"ranks\":%d,\"size_bytes\":%zu,\"mode\":\"%s\","
            "\"poll_us\":%d,\"chunks\":%d,\"t_comm_ms\":%.3f,\"t_compute_ms\":%.3f,"
            "\"t_overlapped_ms\":%.3f,\"hidden_fraction\":%.3f}\n",
            world.size(), bytes, m.name, m.poll_us, m.chunks, t_comm * 1e3, t_comp * 1e3,
            t_both * 1e3, hidden);
      std::fflush(stdout);
    }
  }
  prog.set_mode(saved_mode);
  prog.set_poll_interval_us(saved_poll);
}

}  // namespace

static int run(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    const Opts o = parse(argc, argv);
    zt::MemoryPool pool(zt::make_host_allocator());
    auto world = rt.world(pool);
    if (o.overlap)
      overlap(rt, *world, pool);
    else
      sweep(rt, *world, pool, o);
    world.reset();
    return 0;
  });
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
