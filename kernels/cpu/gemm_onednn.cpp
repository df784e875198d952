// The oneDNN path of cpu::Kernels::gemm: bf16 x bf16 -> fp32 or bf16, and fp32 x fp32 -> fp32,
// through oneDNN's matmul, with its primitives in a bounded LRU cache (kernels/cpu/gemm_mixed.h).
//
// alpha and beta are compiled into each primitive (an output scale and a sum post-op) rather
// than passed at run time: with a runtime output scale oneDNN 2.6 leaves its brgemm kernels for
// the generic "gemm:jit" one, measured here at about a third of the speed (2048x1536x512 on
// 2 threads: 42-59 GFLOP/s vs 135-160). The model's GEMMs use only a few (alpha, beta) pairs.
#include <dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm_mixed.h"
#include "src/core/error.h"

namespace zt::cpu::detail {
namespace {

using dnnl::memory;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct Key {
  bool ta, tb;
  DType ab_type;
  int batch;  // 0: one strided 2-D product; > 0: that many interleaved ones (lda, ldb, ldc 0)
  int M, N, K, lda, ldb, ldc;
  DType c_type;
  uint32_t alpha, beta;  // bit patterns: -0.0 and 0.0 are different primitives, harmlessly
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    const auto mix = [&h](uint64_t v) {
      h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    mix((uint64_t{k.ta} << 1) | uint64_t{k.tb} | (uint64_t(k.c_type) << 2) |
        (uint64_t(k.ab_type) << 10));
    mix((uint64_t(uint32_t(k.M)) << 32) | uint32_t(k.N));
    mix((uint64_t(uint32_t(k.K)) << 32) | uint32_t(k.lda));
    mix((uint64_t(uint32_t(k.ldb)) << 32) | uint32_t(k.ldc));
    mix((uint64_t{k.alpha} << 32) | k.beta);
    mix(uint32_t(k.batch));
    return h;
  }
};

// A primitive with the memory descriptors its arguments are wrapped in.
struct Matmul {
  dnnl::matmul prim;
  memory::desc a, b, c, scratchpad;
};

// The CPU engine, and the cache of primitives created on it, in one object so the engine
// outlives every primitive at exit.
class Onednn {
 public:
  static Onednn& get() {
    static Onednn instance;
    return instance;
  }

  const dnnl::engine& engine() const { return engine_; }

  // The primitive for `key`, created on a miss. A primitive is created outside the lock (it
  // JIT-compiles, milliseconds), so two threads missing on the same key may both build it; the
  // second insert keeps the first. Entries are shared_ptrs: one evicted while another thread
  // runs it stays alive until that call returns.
  std::shared_ptr<const Matmul> find_or_create(const Key& key) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    auto made = create(key);
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->second;
    lru_.emplace_front(key, std::move(made));
    index_.emplace(key, lru_.begin());
    if (lru_.size() > kOnednnCacheCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return lru_.front().second;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return lru_.size();
  }

 private:
  Onednn() : engine_(dnnl::engine::kind::cpu, 0) {}

  // Row-major with leading dimensions: op(A) is M x K with strides (lda, 1), or (1, lda) when
  // A is stored transposed; likewise op(B) and C. oneDNN takes strided plain layouts directly.
  static memory::desc strided(int rows, int cols, int ld, bool trans, memory::data_type t) {
    return {{rows, cols}, t, trans ? memory::dims{1, ld} : memory::dims{ld, 1}};
  }
  // `batch` rows x cols matrices interleaved row by row ([rows][batch][cols]), or transposed
  // ([cols][batch][rows]): dims (1, batch, rows, cols) in oneDNN's acbd or adbc order.
  static memory::desc interleaved(int batch, int rows, int cols, bool trans, memory::data_type t) {
    using tag = memory::format_tag;
    return {{1, batch, rows, cols}, t, trans ? tag::adbc : tag::acbd};
  }

  std::shared_ptr<const Matmul> create(const Key& k) const {
    const auto dt = [](DType t) {
      return t == DType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
    };
    const auto ab = dt(k.ab_type), c_dt = dt(k.c_type);
    const bool inter = k.batch > 0;
    const memory::desc a =
        inter ? interleaved(k.batch, k.M, k.K, k.ta, ab) : strided(k.M, k.K, k.lda, k.ta, ab);
    const memory::desc b =
        inter ? interleaved(k.batch, k.K, k.N, k.tb, ab) : strided(k.K, k.N, k.ldb, k.tb, ab);
    const memory::desc c =
        inter ? interleaved(k.batch, k.M, k.N, false, c_dt) : strided(k.M, k.N, k.ldc, false, c_dt);
    dnnl::primitive_attr attr;
    // The scratchpad is the calling thread's (run()): with the library's own, which this
    // oneDNN build shares between primitives, two threads running brgemm kernels at once
    // (attention's head groups) overwrite each other's packed tiles.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    float alpha, beta;
    std::memcpy(&alpha, &k.alpha, sizeof alpha);
    std::memcpy(&beta, &k.beta, sizeof beta);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    // beta = 0 has no sum post-op at all, so C is written without being read (NaN in C does not
    // survive, as with sgemm). The sum reads C in its own type and adds in fp32 before the one
    // rounding of a bf16 result.
    if (beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(beta);
      attr.set_post_ops(po);
    }
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine_);
      return std::make_shared<const Matmul>(
          Matmul{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc()});
    } catch (const dnnl::error& e) {
      throw Error(fmt::format(
          "gemm_mixed: oneDNN matmul {}x{}x{} (batch {}, trans_a {}, trans_b {}, lda {} "
          "ldb {} ldc {}, {} operands, {} result): {}",
          k.M, k.N, k.K, k.batch, k.ta, k.tb, k.lda, k.ldb, k.ldc, dtype_name(k.ab_type),
          dtype_name(k.c_type), e.what()));
    }
  }

  dnnl::engine engine_;
  mutable std::mutex mutex_;
  std::list<std::pair<Key, std::shared_ptr<const Matmul>>> lru_;  // most recently used first
  std::unordered_map<Key, decltype(lru_)::iterator, KeyHash> index_;
};

}  // namespace

namespace {

// Whether oneDNN's effective ISA includes `need`. Its ISA values are nested bit sets: AMX's
// contains AVX512-BF16's, which contains AVX-512's; AVX2-VNNI's contains neither.
bool isa_includes(dnnl::cpu_isa need) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(need)) == static_cast<unsigned>(need);
}

}  // namespace

bool onednn_bf16_available() {
  static const bool available = isa_includes(dnnl::cpu_isa::avx512_core_bf16);
  return available;
}

bool onednn_fp32_preferred() {
  static const bool preferred = isa_includes(dnnl::cpu_isa::avx512_core);
  return preferred;
}

size_t onednn_cache_size() {
  return Onednn::get().size();
}

namespace {

void run(const Matmul& mm, const void* A, const void* B, void* C) {
  auto& dnn = Onednn::get();
  // A stream is not meant to be shared between threads; one per thread, on the one engine.
  thread_local dnnl::stream stream(dnn.engine());
  // oneDNN's memory objects take non-const handles; matmul only reads SRC and WEIGHTS.
  memory a(mm.a, dnn.engine(), const_cast<void*>(A));
  memory b(mm.b, dnn.engine(), const_cast<void*>(B));
  memory c(mm.c, dnn.engine(), C);
  // Grown to the largest scratchpad this thread's primitives need, kept until it exits.
  thread_local std::vector<unsigned char> pad;
  if (pad.size() < mm.scratchpad.get_size()) pad.resize(mm.scratchpad.get_size());
  memory s(mm.scratchpad, dnn.engine(), pad.data());
  mm.prim.execute(
      stream,
      {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, s}});
  stream.wait();
}

}  // namespace

void gemm_onednn(bool ta, bool tb, int M, int N, int K, float alpha, const void* A, int lda,
                 const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                 DType c_type) {
  const auto mm = Onednn::get().find_or_create(
      {ta, tb, ab_type, 0, M, N, K, lda, ldb, ldc, c_type, bits_of(alpha), bits_of(beta)});
  run(*mm, A, B, C);
}

void gemm_onednn_interleaved(bool ta, bool tb, int batch, int M, int N, int K, float alpha,
                             const void* A, const void* B, float beta, void* C, DType c_type) {
  ZT_CHECK(batch > 0 && M > 0 && N > 0 && K > 0, "gemm_onednn_interleaved: size {} x {}x{}x{}",
           batch, M, N, K);
  ZT_CHECK(c_type == DType::F32 || c_type == DType::BF16, "gemm_onednn_interleaved: a {} result",
           dtype_name(c_type));
  ZT_CHECK(onednn_bf16_available(),
           "gemm_onednn_interleaved: the oneDNN path needs a CPU with AVX512-BF16 or AMX");
  const auto mm = Onednn::get().find_or_create(
      {ta, tb, DType::BF16, batch, M, N, K, 0, 0, 0, c_type, bits_of(alpha), bits_of(beta)});
  run(*mm, A, B, C);
}

std::string onednn_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_mic:
      return "avx512_mic";
    case isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace zt::cpu::detail
