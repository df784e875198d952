#pragma once
// Tensor is a non-owning, typed view: pointer, shape, row-major strides, dtype and device.
// Storage is owned by a Buffer from MemoryPool (or carved from an Arena); views never free.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "src/core/dtype.h"
#include "src/core/error.h"

namespace zt {

constexpr int kMaxDims = 4;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    ZT_CHECK(dims.size() <= kMaxDims, "at most {} dims", kMaxDims);
    for (int64_t d : dims) d_[n_++] = d;
  }
  int rank() const { return n_; }
  int64_t operator[](int i) const { return d_[static_cast<size_t>(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < n_; ++i) n *= d_[static_cast<size_t>(i)];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (d_[static_cast<size_t>(i)] != o.d_[static_cast<size_t>(i)]) return false;
    return true;
  }
  std::string str() const;

 private:
  std::array<int64_t, kMaxDims> d_{};
  int n_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, Shape shape, DType dtype, Device device = Device::Cpu)
      : data_(data), shape_(shape), dtype_(dtype), device_(device) {}

  void* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  int64_t dim(int i) const { return shape_[i]; }
  // Row-major stride of dimension i, in elements.
  int64_t stride(int i) const {
    int64_t s = 1;
    for (int j = shape_.rank() - 1; j > i; --j) s *= shape_[j];
    return s;
  }
  bool defined() const { return data_ != nullptr; }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  float* f32() const {
    ZT_CHECK(dtype_ == DType::F32, "tensor is {}, not fp32", dtype_name(dtype_));
    return static_cast<float*>(data_);
  }
  // The sub-tensor of `numel` elements starting `offset` elements in, with a new shape.
  Tensor slice(int64_t offset, Shape shape) const {
    ZT_CHECK(offset >= 0 && offset + shape.numel() <= numel(), "slice [{}, +{}) outside {}", offset,
             shape.numel(), numel());
    return Tensor(static_cast<char*>(data_) + offset * static_cast<int64_t>(dtype_size(dtype_)),
                  shape, dtype_, device_);
  }
  Tensor reshape(Shape shape) const {
    ZT_CHECK(shape.numel() == numel(), "reshape {} -> {}", shape_.str(), shape.str());
    return Tensor(data_, shape, dtype_, device_);
  }

 private:
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::Cpu;
};

}  // namespace zt
