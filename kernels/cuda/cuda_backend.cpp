#include "kernels/cuda/cuda_backend.h"

#include "src/core/cuda_check.h"

namespace zt {

CudaBackend::CudaBackend() {
  ZT_CUDA_CHECK(cudaGetDevice(&device_));
}
CudaBackend::~CudaBackend() = default;

void CudaBackend::bind_thread() {
  ZT_CUDA_CHECK(cudaSetDevice(device_));
}

// Host copies synchronise: the host buffer (often pageable, often reused right away) is safe
// to touch when they return, and every device result the host reads is complete.
void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, compute_.get()));
  compute_.synchronize();
}
void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_.get()));
  compute_.synchronize();
}
void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_.get()));
}
void CudaBackend::copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                          size_t width, size_t rows) {
  if (width == 0 || rows == 0) return;
  ZT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                                  cudaMemcpyDeviceToDevice, compute_.get()));
}
void CudaBackend::fill_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, compute_.get()));
}
void CudaBackend::synchronize() {
  compute_.synchronize();
}

void CudaBackend::copy_stream_waits_compute() {
  compute_done_.record(compute_.get());
  copies_.wait(compute_done_);
}
void CudaBackend::offload(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  copy_stream_waits_compute();  // the source is complete
  ZT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, copies_.get()));
}
void CudaBackend::fetch(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  copy_stream_waits_compute();  // earlier readers of the destination are done
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, copies_.get()));
}
void CudaBackend::join_copies() {
  copies_done_.record(copies_.get());
  compute_.wait(copies_done_);
}
void CudaBackend::wait_copies() {
  copies_.synchronize();
}

}  // namespace zt
