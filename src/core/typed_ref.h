#pragma once
// Ref / CRef: an address in a backend's memory together with its element type. The compute
// path's activations and parameters are in the run's working precision (fp32, bf16 or fp16), so
// the type travels with the pointer and each backend op turns it into its templated kernel
// (visit_dtype). An fp32, bf16 or fp16 pointer converts implicitly.
#include <cstddef>
#include <cstdint>

#include "src/core/dtype.h"
#include "src/core/error.h"
#include "src/core/half.h"

namespace zt {

struct Ref {
  void* p = nullptr;
  DType t = DType::F32;

  Ref() = default;
  Ref(void* ptr, DType type) : p(ptr), t(type) {}
  template <typename T>
  Ref(T* ptr) : p(ptr), t(dtype_of<T>()) {}  // NOLINT(google-explicit-constructor)

  Ref operator+(int64_t i) const {
    return {p == nullptr ? nullptr : static_cast<char*>(p) + i * static_cast<int64_t>(elem()), t};
  }
  size_t elem() const { return dtype_size(t); }
  size_t bytes(int64_t n) const { return static_cast<size_t>(n) * elem(); }
  explicit operator bool() const { return p != nullptr; }
  template <typename T>
  T* as() const {
    ZT_CHECK(p == nullptr || t == dtype_of<T>(), "a {} array where {} was expected", dtype_name(t),
             dtype_name(dtype_of<T>()));
    return static_cast<T*>(p);
  }
};

struct CRef {
  const void* p = nullptr;
  DType t = DType::F32;

  CRef() = default;
  CRef(const void* ptr, DType type) : p(ptr), t(type) {}
  CRef(Ref r) : p(r.p), t(r.t) {}  // NOLINT(google-explicit-constructor)
  template <typename T>
  CRef(const T* ptr) : p(ptr), t(dtype_of<T>()) {}  // NOLINT(google-explicit-constructor)

  CRef operator+(int64_t i) const {
    return {p == nullptr ? nullptr : static_cast<const char*>(p) + i * static_cast<int64_t>(elem()),
            t};
  }
  size_t elem() const { return dtype_size(t); }
  size_t bytes(int64_t n) const { return static_cast<size_t>(n) * elem(); }
  explicit operator bool() const { return p != nullptr; }
  template <typename T>
  const T* as() const {
    ZT_CHECK(p == nullptr || t == dtype_of<T>(), "a {} array where {} was expected", dtype_name(t),
             dtype_name(dtype_of<T>()));
    return static_cast<const T*>(p);
  }
};

}  // namespace zt
