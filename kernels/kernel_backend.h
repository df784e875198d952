#pragma once
// KernelBackend: the Backend's kernels, written once for every backend from the op list
// (kernels/ops.inc). Each operation picks the instantiation of the backend's kernel (the static
// members of `Kernels`) from the dtype the list names, turns the typed references it receives
// (Ref/CRef: a pointer and its dtype) into that instantiation's typed pointers (ops::kernel_arg,
// which checks that they agree) and calls it where `Self` runs its work: `self.exec()` (nothing
// on the CPU, the compute stream on CUDA), inside `self.device_access()` (what must be held while
// the host computes on device memory: the staging backend's DeviceAccess; nothing by default). A
// backend is then its memory moves plus
//   class MyBackend final : public KernelBackend<my::Kernels, MyBackend>.
#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "src/core/error.h"
#include "src/core/half.h"

namespace zt {

template <class Kernels, class Self>
class KernelBackend : public Backend {
 public:
#define ZT_OP(R, name, ...)                                                             \
  R name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) override {           \
    [[maybe_unused]] const auto held = access();                                        \
    return Kernels::name(ZT_OP_MAP(ZT_OP_KERNEL_ARG, ZT_OP_NOTHING, __VA_ARGS__) on()); \
  }
#define ZT_TYPED_OP(name, x, ...)                                                              \
  void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) override {               \
    [[maybe_unused]] const auto held = access();                                               \
    visit_dtype(x.t, [&](auto t) {                                                             \
      using T = decltype(t);                                                                   \
      Kernels::template name<T>(ZT_OP_MAP(ZT_OP_KERNEL_ARG, ZT_OP_NOTHING, __VA_ARGS__) on()); \
    });                                                                                        \
  }
#define ZT_TYPED_OUT_OP(name, x, y, ...)                                                     \
  void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) override {             \
    [[maybe_unused]] const auto held = access();                                             \
    visit_dtype(x.t, [&](auto t) {                                                           \
      using T = decltype(t);                                                                 \
      if (y.t == DType::F32) {                                                               \
        using Y = float;                                                                     \
        Kernels::template name<T, Y>(ZT_OP_MAP(ZT_OP_KERNEL_ARG, ZT_OP_NOTHING, __VA_ARGS__) \
                                         on());                                              \
      } else {                                                                               \
        using Y = T;                                                                         \
        Kernels::template name<T, Y>(ZT_OP_MAP(ZT_OP_KERNEL_ARG, ZT_OP_NOTHING, __VA_ARGS__) \
                                         on());                                              \
      }                                                                                      \
    });                                                                                      \
  }
#define ZT_DTYPE_OP(name, dtype, ...)                                                          \
  void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__), DType dtype) override {  \
    [[maybe_unused]] const auto held = access();                                               \
    visit_dtype(dtype, [&](auto t) {                                                           \
      using T = decltype(t);                                                                   \
      Kernels::template name<T>(ZT_OP_MAP(ZT_OP_KERNEL_ARG, ZT_OP_NOTHING, __VA_ARGS__) on()); \
    });                                                                                        \
  }
#include "kernels/ops.inc"

 private:
  // Where Self runs its kernels (Self::exec(), which Self must declare).
  typename Kernels::Exec on() const {
    return static_cast<const Self&>(*this).exec();
  }
  // What Self holds around a kernel (Self::device_access(), or nothing).
  auto access() const {
    if constexpr (requires(const Self& s) { s.device_access(); })
      return static_cast<const Self&>(*this).device_access();
    else
      return 0;
  }
};

}  // namespace zt
