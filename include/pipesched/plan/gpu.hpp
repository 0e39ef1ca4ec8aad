// pipesched plan: the accelerators plan() knows by name, and every constant its time model uses.
//
// One table row per GPU, each constant with its source. Peaks and memory come from each
// vendor's datasheet (dense, no structured sparsity). Memory is the datasheet's "GB" figure
// read as GiB: HBM stacks come in binary sizes (an H100's five 16 GiB stacks make its "80GB"),
// and what the driver shows is within a few percent of it; plan()'s memory reserve
// (plan_options::memory_reserve_bytes) covers the rest, along with the CUDA context,
// communication buffers and allocator fragmentation.
//
// What a GPU achieves (operations.hpp turns these into seconds):
//   gemm_efficiency     the best dense BF16 matmul throughput found by a shape search, over the
//                       peak: "Maximum Achievable Matmul FLOPS" (stas00/ml-engineering,
//                       compute/accelerator/README.md @ 744d01e): A100 SXM 271.2 of 312, H100 SXM
//                       794.5 of 989, B200 1745 of 2250; times sustained_gemm_fraction (below);
//                       smaller GEMMs lose further by tile and wave quantisation over `sm_count`
//                       multiprocessors and by the memory roofline
//   unaligned_gemm      the factor a GEMM keeps when a dimension is not a multiple of
//                       `gemm_alignment` elements (128 bytes on A100 and later): SwiGLU with
//                       d_ff = 10922 against 10944 on H100, 272.73 against 398.38 TFLOP/s (same
//                       source, training/performance/README.md)
//   attention_*         FlashAttention's fraction of the peak, forward and backward: FA2 on A100
//                       reaches 50-73 % forward (Dao 2023, arXiv 2307.08691); on H100 FA3 / cuDNN
//                       reach 614 of 989 TFLOP/s forward at d = 128, s = 8k (pytorch/benchmark
//                       ff65cb675209); the backward, with 2.5x the FLOPs, at about 0.45
//   memory_efficiency   achieved fraction of HBM bandwidth for elementwise kernels:
//                       achieved_memory_fraction (below), within Calculon's A100 table (0.6 for
//                       transfers >= 1 MB, 0.75 >= 10 MB, 0.9 >= 100 MB; systems/a100_80g.json)
//   *_bus_efficiency    NCCL's bus bandwidth over the line rate: 370 of 450 GB/s NVLink on H100
//                       with rings ("protocol overhead ~20 %", NVIDIA/nccl-tests #212), 46-48 of
//                       50 GB/s per 400 Gb/s NIC (nccl-tests #290, #267)
//   latencies           one NCCL step inside a node (4 us) and across nodes (10 us), a pipeline
//                       send/receive pair (30 us), the gap between two kernels (5 us): assumed
//                       (orders of magnitude of NCCL's and CUDA's launch latencies), not fitted
//
// Two constants are fitted, once, on the fit rows of the validation table
// (tests/data/plan/measured_runs.csv, docs/plan.md) and held for every GPU: the fraction of the
// MAMF a training run sustains and the achieved HBM fraction. They minimise the fit rows' mean
// error on a 0.01 / 0.05 grid (tests/test_plan_validation.cpp checks it is a minimum).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipesched::plan {

/// Fitted (see above): the fraction of the shape search's best matmul throughput a training
/// run sustains (clocks under a whole node's power, the library's kernels), and the achieved
/// fraction of HBM bandwidth of the elementwise kernels.
inline constexpr double sustained_gemm_fraction = 0.81;
inline constexpr double achieved_memory_fraction = 0.65;

struct gpu_spec {
    std::string_view name{};
    double peak_flops = 0.0;        ///< dense BF16 FLOP/s
    double fp8_peak_flops = 0.0;    ///< dense FP8 FLOP/s; 0: no FP8 tensor cores
    double memory_bytes = 0.0;      ///< HBM capacity
    double memory_bandwidth = 0.0;  ///< HBM bytes/s
    double nvlink_bandwidth = 0.0;  ///< bytes/s one way per GPU inside a node
    double network_bandwidth = 0.0; ///< bytes/s one way per GPU between nodes (its NIC)
    std::uint32_t gpus_per_node = 8;
    std::uint32_t sm_count = 132;   ///< streaming multiprocessors: one wave of GEMM tiles
    double gemm_efficiency = 0.8 * sustained_gemm_fraction;
    double unaligned_gemm = 0.685;
    std::uint32_t gemm_alignment = 64; ///< elements (128 bytes of BF16)
    double attention_forward_efficiency = 0.6;
    double attention_backward_efficiency = 0.45;
    double memory_efficiency = achieved_memory_fraction;
    double nvlink_bus_efficiency = 0.82;
    double network_bus_efficiency = 0.94;
    double nvlink_latency = 4e-6;   ///< seconds per NCCL step inside a node
    double network_latency = 10e-6; ///< seconds per NCCL step across nodes
    double p2p_latency = 30e-6;     ///< seconds per pipeline send/receive pair (launch, sync)
    double kernel_overhead = 5e-6;  ///< seconds between two kernels of a pass
};

inline constexpr double gib = 1024.0 * 1024.0 * 1024.0;

namespace detail {
/// A DGX-style node of 8 GPUs; the per-GPU figures the rows below differ in.
constexpr gpu_spec make_gpu(std::string_view name, double bf16, double fp8, double memory_gib, double hbm,
                            double nvlink, double nic, std::uint32_t sms, double gemm, double attention_forward,
                            double attention_backward) {
    gpu_spec g{};
    g.name = name;
    g.peak_flops = bf16;
    g.fp8_peak_flops = fp8;
    g.memory_bytes = memory_gib * gib;
    g.memory_bandwidth = hbm;
    g.nvlink_bandwidth = nvlink;
    g.network_bandwidth = nic;
    g.sm_count = sms;
    g.gemm_efficiency = gemm * sustained_gemm_fraction;
    g.memory_efficiency = achieved_memory_fraction;
    g.attention_forward_efficiency = attention_forward;
    g.attention_backward_efficiency = attention_backward;
    return g;
}
} // namespace detail

/// Every preset, the default first.
inline constexpr std::array<gpu_spec, 7> gpu_presets{{
    // NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 TFLOPS with sparsity (989.5
    // dense), FP8 3,958 (1,979 dense), 80GB HBM3 at 3.35 TB/s, NVLink 900 GB/s (450 GB/s each
    // way), 132 SMs; one 400 Gb/s ConnectX-7 NIC per GPU in DGX H100. MAMF 794.5.
    detail::make_gpu("h100", 989.5e12, 1979e12, 80, 3.35e12, 450e9, 50e9, 132, 0.803, 0.62, 0.45),
    // NVIDIA H200 datasheet (SXM): the H100's compute, 141GB HBM3e at 4.8 TB/s, NVLink 900 GB/s;
    // 400 Gb/s per GPU. MAMF as H100 (ml-engineering: "H200 same").
    detail::make_gpu("h200", 989.5e12, 1979e12, 141, 4.8e12, 450e9, 50e9, 132, 0.803, 0.62, 0.45),
    // NVIDIA A100 datasheet: BF16 312 TFLOPS dense, no FP8, 80GB HBM2e at 2,039 GB/s, NVLink
    // 600 GB/s, 108 SMs; 200 Gb/s HDR per GPU in DGX A100. MAMF 271.2.
    detail::make_gpu("a100-80gb", 312e12, 0.0, 80, 2.039e12, 300e9, 25e9, 108, 0.869, 0.62, 0.45),
    // NVIDIA A100 datasheet: 40GB HBM2 at 1,555 GB/s.
    detail::make_gpu("a100-40gb", 312e12, 0.0, 40, 1.555e12, 300e9, 25e9, 108, 0.869, 0.62, 0.45),
    // NVIDIA HGX B200 specifications (per GPU): BF16 4.5 PFLOPS with sparsity (2.25 dense), FP8
    // 4.5 dense, 180GB HBM3e at 8 TB/s, NVLink 1.8 TB/s (900 GB/s each way), 148 SMs; 400 Gb/s
    // per GPU. MAMF 1745.
    detail::make_gpu("b200", 2250e12, 4500e12, 180, 8.0e12, 900e9, 50e9, 148, 0.776, 0.62, 0.45),
    // AMD Instinct MI300X datasheet: 1,307.4 TFLOPS BF16 dense, 2,614.9 FP8 dense, 192GB HBM3 at
    // 5.3 TB/s, 304 compute units, Infinity Fabric links of 128 GB/s (64 each way) to each of 7
    // peers; 400 Gb/s per GPU. No public MAMF in the sources above: the H100's fraction.
    detail::make_gpu("mi300x", 1307.4e12, 2614.9e12, 192, 5.3e12, 64e9, 50e9, 304, 0.803, 0.62, 0.45),
    // NVIDIA H800 (SXM, the H100 made for export to China): the H100's compute and memory with
    // NVLink cut to 400 GB/s; taken as 400 GB/s one way per GPU, as issue #32 asks (DeepSeek-V3's
    // report, arXiv 2412.19437, measures about 160 GB/s achieved); 400 Gb/s NIC per GPU.
    detail::make_gpu("h800", 989.5e12, 1979e12, 80, 3.35e12, 400e9, 50e9, 132, 0.803, 0.62, 0.45),
}};

/// The preset named `name` (exact, lower case), or nullopt.
[[nodiscard]] constexpr std::optional<gpu_spec> find_gpu(std::string_view name) noexcept {
    for (const gpu_spec& g : gpu_presets)
        if (g.name == name) return g;
    return std::nullopt;
}

} // namespace pipesched::plan
