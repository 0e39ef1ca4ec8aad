// pipesched plan: the accelerators plan() knows by name.
//
// Peak dense BF16 throughput (no structured sparsity) and memory from each vendor's datasheet.
// Memory is the datasheet's "GB" figure read as GiB: HBM stacks come in binary sizes (an H100's
// five 16 GiB stacks make its "80GB"), and what the driver shows is within a few percent of it;
// plan()'s memory reserve (training_config::memory_reserve_bytes) covers the rest, along with
// the CUDA context, communication buffers and allocator fragmentation.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipesched::plan {

struct gpu_spec {
    std::string_view name{};
    double peak_flops = 0.0;      ///< dense BF16 FLOP/s
    double memory_bytes = 0.0;    ///< HBM capacity
    double memory_bandwidth = 0.0; ///< HBM bytes/s (the optimizer step is bandwidth-bound)
    double nvlink_bandwidth = 0.0; ///< bytes/s one way per GPU inside a node
    double network_bandwidth = 0.0; ///< bytes/s one way per GPU between nodes
    std::uint32_t gpus_per_node = 8;
};

inline constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// Every preset, the default first.
inline constexpr std::array<gpu_spec, 6> gpu_presets{{
    // NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 TFLOPS with sparsity (989.5
    // dense), 80GB HBM3 at 3.35 TB/s, NVLink 900 GB/s (450 GB/s each way); one 400 Gb/s
    // ConnectX-7 NIC per GPU in DGX H100.
    {"h100", 989.5e12, 80 * gib, 3.35e12, 450e9, 50e9, 8},
    // NVIDIA H200 datasheet (SXM): BF16 1,979 TFLOPS with sparsity, 141GB HBM3e at 4.8 TB/s,
    // NVLink 900 GB/s; 400 Gb/s per GPU.
    {"h200", 989.5e12, 141 * gib, 4.8e12, 450e9, 50e9, 8},
    // NVIDIA A100 datasheet: BF16 312 TFLOPS dense, 80GB HBM2e at 2,039 GB/s, NVLink 600 GB/s;
    // 200 Gb/s HDR per GPU in DGX A100.
    {"a100-80gb", 312e12, 80 * gib, 2.039e12, 300e9, 25e9, 8},
    // NVIDIA A100 datasheet: 40GB HBM2 at 1,555 GB/s.
    {"a100-40gb", 312e12, 40 * gib, 1.555e12, 300e9, 25e9, 8},
    // NVIDIA HGX B200 specifications (per GPU): BF16 4.5 PFLOPS with sparsity (2.25 dense),
    // 180GB HBM3e at 8 TB/s, NVLink 1.8 TB/s (900 GB/s each way); 400 Gb/s per GPU.
    {"b200", 2250e12, 180 * gib, 8.0e12, 900e9, 50e9, 8},
    // AMD Instinct MI300X datasheet: 1,307.4 TFLOPS BF16 dense (2,614.9 with sparsity), 192GB
    // HBM3 at 5.3 TB/s, Infinity Fabric links of 128 GB/s (64 each way) to each of 7 peers;
    // 400 Gb/s per GPU.
    {"mi300x", 1307.4e12, 192 * gib, 5.3e12, 64e9, 50e9, 8},
}};

/// The preset named `name` (exact, lower case), or nullopt.
[[nodiscard]] constexpr std::optional<gpu_spec> find_gpu(std::string_view name) noexcept {
    for (const gpu_spec& g : gpu_presets)
        if (g.name == name) return g;
    return std::nullopt;
}

} // namespace pipesched::plan
