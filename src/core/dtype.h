#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zt {

enum class DType : uint8_t { F32, BF16, F16 };

constexpr size_t dtype_size(DType t) {
  return t == DType::F32 ? 4 : 2;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "fp32";
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "fp16";
  }
  return "?";
}

enum class Device : uint8_t { Cpu, Cuda };

constexpr std::string_view device_name(Device d) {
  return d == Device::Cpu ? "cpu" : "cuda";
}

}  // namespace zt
