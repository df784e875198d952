#pragma once
// A cluster description for the step-time simulator: what one device computes and holds, and
// how fast its groups communicate. Loaded from JSON (`zerotron simulate --cluster F`) or taken
// from a preset; every field can be overridden by a calibration file measured on real hardware.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/core/dtype.h"

namespace zt {

struct ClusterSpec {
  std::string name;
  int gpus_per_node = 8;
  int nodes = 1;
  // Dense GEMM peaks of one device in TFLOP/s, by operand type, since a GEMM runs at the peak of
  // its operands: half (fp16/bf16; tensor cores on a GPU; on a CPU whatever its half GEMM
  // reaches, today the widen-and-sgemm path, so the sgemm rate); fp32 (CUDA cores; 0 means the
  // same as half, as on a CPU); TF32 (fp32 operands on sm_80+ tensor cores; 0 where the device
  // has none). `tf32` says whether fp32 GEMMs use it (Megatron's default where it exists).
  double peak_tflops = 0;
  double fp32_peak_tflops = 0;
  double tf32_peak_tflops = 0;
  bool tf32 = false;
  // The fraction of peak the best large GEMM reaches, and the GEMM dimension at which a
  // dimension's efficiency factor is one half: efficiency(m,n,k) = gemm_efficiency ·
  // m/(m+s) · n/(n+s) · k/(k+s) with s = gemm_half_dim (small GEMMs underfill the machine).
  double gemm_efficiency = 0.7;
  double gemm_half_dim = 64;
  double hbm_bytes = 0;        // device memory
  double hbm_gbps = 0;         // device memory bandwidth, GB/s (memory-bound kernels)
  double intra_node_gbps = 0;  // per-device bus bandwidth inside a node, GB/s
  double intra_node_latency_us = 0;
  double inter_node_gbps = 0;  // per node (all its NICs), GB/s
  double inter_node_latency_us = 0;
  // The node's NICs, and how many of them one collective's rings spread over when its group
  // crosses nodes (0: all of them, NCCL's channels on distinct NICs). Groups that leave the
  // same node share its NICs; a group that may use fewer NICs than the node has gets less
  // than the node's bandwidth even when the others are idle.
  int nics_per_node = 1;
  int nics_per_collective = 0;
  // The fraction of the nominal bandwidths above that collectives reach (fitted to published
  // runs for the presets; 1 = the vendor figure).
  double intra_node_efficiency = 1;
  double inter_node_efficiency = 1;
  double pcie_gbps = 0;           // device <-> host, per device (Pa+cpu offload)
  double kernel_overhead_us = 0;  // launch + tail per GEMM
  // True when the devices of a node share one compute peak (CPU ranks on the same cores): each
  // device then gets peak_tflops / devices_in_use_per_node.
  bool shared_compute = false;
  // False where a collective's progress takes the compute's own cores (CPU ranks: the MPI
  // progress thread copies and reduces on the cores the GEMMs run on), so communication and
  // compute share one resource in the step's schedule; true where they have their own (GPU
  // streams: copy engines and NVLink/IB run beside the SMs).
  bool comm_overlaps_compute = true;
  double memcpy_gbps = 0;  // host copies (Pa+cpu on the CPU backend); 0: pcie_gbps
  // Offload (docs/design/offload.md), per node and shared by its ranks; 0: not known, and
  // `simulate` refuses a run that needs it. Host memory bandwidth for the host AdamW of devices
  // with memory of their own (on the CPU the device is the host: its AdamW is the device's);
  // the --nvme-path disk's direct-I/O read and write bandwidths (bench_disk_bandwidth DIR).
  double host_memory_gbps = 0;
  double nvme_read_gbps = 0, nvme_write_gbps = 0;
  // Ranks that share cores (CPU) run faster while the others wait: the most a rank speeds up
  // when it is alone (ranks x threads / cores, from the calibration; 1 = devices of their own).
  // A pipeline's bubble then costs less than its idle time: the waiting ranks lend their cores.
  double shared_core_speedup = 1;

  // Measured on the machine at hand (bench_calibrate); where a table has an entry the simulator
  // interpolates it instead of the roofline or the ring model. Times are per rank with every
  // rank of the calibration run busy at once (shared_compute is then already in them).
  struct GemmSample {
    std::string dtype;  // fp32, bf16, fp16
    std::string pass;   // fwd (x W^T), dgrad (dy W), wgrad (dy^T x)
    double m = 0, n = 0, k = 0, gflops = 0;
  };
  struct AttentionSample {
    std::string dtype;
    double batch = 0, heads = 0, seq = 0, head_dim = 0, forward_ms = 0, backward_ms = 0;
  };
  struct CommSample {
    std::string op;  // all_reduce, reduce_scatter, all_gather (nccl-tests sizes), p2p, memcpy
    int group = 0;
    double bytes = 0, us = 0;
  };
  struct ElementwiseSample {
    std::string dtype;
    std::string kernel;  // layer_fwd, layer_bwd, adamw: ns per element (see bench_calibrate)
    double ns_per_elem = 0;
  };
  std::vector<GemmSample> gemm_table;
  std::vector<AttentionSample> attention_table;
  std::vector<CommSample> comm_table;
  std::vector<ElementwiseSample> elementwise_table;
};

// Lookups in the measured tables; a negative result means the table has nothing for it.
// A GEMM [m,k] x [k,n] of `pass` in `dtype`: the rate of the measured shape nearest in log space.
double table_gemm_ms(const ClusterSpec& c, DType dtype, std::string_view pass, double m, double n,
                     double k);
// One layer's attention (forward when !backward) for `batch` x `heads` heads of [seq, head_dim]:
// the nearest measured (seq, head_dim) scaled by batch·heads and seq².
double table_attention_ms(const ClusterSpec& c, DType dtype, bool backward, double batch,
                          double heads, double seq, double head_dim);
// One collective of `bytes` (nccl-tests convention) over `group` ranks, interpolated in
// log(bytes)-log(time) between the measured sizes (linear in bytes beyond the largest).
double table_comm_ms(const ClusterSpec& c, std::string_view op, int group, double bytes);
double table_elementwise_ns(const ClusterSpec& c, DType dtype, std::string_view kernel);

// The dense peak (TFLOP/s, before shared_compute's split) of a GEMM whose operands are `operands`.
double gemm_peak_tflops(const ClusterSpec& c, DType operands);

std::vector<std::string_view> cluster_preset_names();
// A preset by name (dgx2-v100, dgx-a100, dgx-h100); InputError for an unknown one.
ClusterSpec cluster_preset(std::string_view name);
// Fields present in `j` override `base` (so a calibration file may set only what it measured).
ClusterSpec cluster_from_json(const nlohmann::json& j, ClusterSpec base = {});
nlohmann::json cluster_to_json(const ClusterSpec& c);

}  // namespace zt
