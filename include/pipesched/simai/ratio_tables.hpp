// pipesched: the bandwidth-ratio tables of SimAI's analytical backend, as data.
//
// Facts from aliyun/SimAI v1.6 (f5efb5a9), astra-sim-alibabacloud/inputs/ratio/nic_ratio.csv,
// nvlink_ratio.csv and ata_ratio.csv, which SimAI_analytical reads at start-up (relative to its
// working directory) and uses to scale the bus bandwidth of tensor-parallel all-gathers and
// reduce-scatters (NIC or NVLink table, by the bottleneck) and of all-to-alls (ata table).
// Each table has one row per message size (16 MiB .. 16 GiB, powers of two) and one column per
// "node count"; SimAI reads an empty cell as 1. SimAI looks up the column for a node count of
// 1, 2, 4, 8, 16, 32, 64, 128 (columns 1..8) or the marker 9 ("Multi 16", column 9), and takes
// column 5 for every other count. Only columns 1..9 are ever read, so only they are kept.
#pragma once

#include <array>
#include <cstddef>

namespace pipesched::simai {

inline constexpr std::size_t ratio_rows = 11;

/// The message size of each row, the first column of every table: 16 MiB, doubling to 16 GiB.
inline constexpr std::array<double, ratio_rows> ratio_sizes = [] {
    std::array<double, ratio_rows> out{};
    double bytes = 16.0 * 1024 * 1024;
    for (double& b : out) {
        b = bytes;
        bytes *= 2;
    }
    return out;
}();

/// A ratio table: per row (message size ratio_sizes[i]), the values of columns 1..9.
using ratio_table = std::array<std::array<double, 9>, ratio_rows>;

// nic_ratio.csv
inline constexpr ratio_table nic_ratio{{
    {0.45, 0.32, 0.24, 0.13, 0.05, 0.044, 0.021, 0.0087, 0.86}, // 16 MiB
    {0.55, 0.47, 0.38, 0.24, 0.11, 0.052, 0.042, 0.021225, 0.92}, // 32 MiB
    {0.65, 0.5, 0.53, 0.39, 0.21, 0.106, 0.051, 0.04405, 0.94}, // 64 MiB
    {0.69, 0.67, 0.67, 0.54, 0.38, 0.205, 0.107, 0.0533, 0.94}, // 128 MiB
    {0.73, 0.85, 0.77, 0.69, 0.57, 0.387, 0.209, 0.1027, 0.94}, // 256 MiB
    {0.76, 0.89, 0.85, 0.78, 0.73, 0.562, 0.384, 0.1902, 0.95}, // 512 MiB
    {0.77, 0.92, 0.93, 0.9, 0.76, 0.74, 0.563, 0.314575, 0.96}, // 1 GiB
    {0.78, 0.94, 0.94, 0.94, 0.92, 0.758, 0.745, 0.553525, 0.96}, // 2 GiB
    {0.79, 0.95, 0.95, 0.95, 0.95, 0.923, 0.755, 0.740175, 0.96}, // 4 GiB
    {0.8, 0.95, 0.96, 0.96, 0.96, 0.953, 0.914, 0.7648, 0.96}, // 8 GiB
    {0.81, 0.96, 0.96, 0.96, 0.96, 0.957, 0.958, 0.919175, 0.96}, // 16 GiB
}};

// nvlink_ratio.csv (columns 6..8 are empty in the file, read as 1)
inline constexpr ratio_table nvlink_ratio{{
    {0.45, 0.55, 0.34, 0.16, 0.08, 1, 1, 1, 0.86}, // 16 MiB
    {0.55, 0.68, 0.6, 0.34, 0.16, 1, 1, 1, 0.92}, // 32 MiB
    {0.65, 0.74, 0.71, 0.62, 0.33, 1, 1, 1, 0.94}, // 64 MiB
    {0.69, 0.8, 0.74, 0.7, 0.65, 1, 1, 1, 0.94}, // 128 MiB
    {0.73, 0.84, 0.79, 0.78, 0.72, 1, 1, 1, 0.94}, // 256 MiB
    {0.76, 0.86, 0.86, 0.82, 0.75, 1, 1, 1, 0.95}, // 512 MiB
    {0.77, 0.87, 0.87, 0.86, 0.83, 1, 1, 1, 0.96}, // 1 GiB
    {0.78, 0.87, 0.87, 0.87, 0.86, 1, 1, 1, 0.96}, // 2 GiB
    {0.79, 0.88, 0.88, 0.88, 0.87, 1, 1, 1, 0.96}, // 4 GiB
    {0.8, 0.88, 0.88, 0.88, 0.88, 1, 1, 1, 0.96}, // 8 GiB
    {0.81, 0.88, 0.88, 0.88, 0.88, 1, 1, 1, 0.96}, // 16 GiB
}};

// ata_ratio.csv (columns 6..8 are empty in the file, read as 1)
inline constexpr ratio_table alltoall_ratio{{
    {0.44, 0.52, 0.67, 0.64, 0.62, 1, 1, 1, 0.86}, // 16 MiB
    {0.51, 0.63, 0.68, 0.67, 0.66, 1, 1, 1, 0.92}, // 32 MiB
    {0.6, 0.72, 0.83, 0.82, 0.66, 1, 1, 1, 0.94}, // 64 MiB
    {0.65, 0.76, 0.9, 0.85, 0.72, 1, 1, 1, 0.94}, // 128 MiB
    {0.7, 0.79, 0.92, 0.87, 0.75, 1, 1, 1, 0.94}, // 256 MiB
    {0.71, 0.8, 0.94, 0.89, 0.81, 1, 1, 1, 0.95}, // 512 MiB
    {0.74, 0.81, 0.94, 0.92, 0.85, 1, 1, 1, 0.96}, // 1 GiB
    {0.76, 0.81, 0.95, 0.93, 0.88, 1, 1, 1, 0.96}, // 2 GiB
    {0.77, 0.8, 0.95, 0.94, 0.89, 1, 1, 1, 0.96}, // 4 GiB
    {0.78, 0.8, 0.95, 0.94, 0.9, 1, 1, 1, 0.96}, // 8 GiB
    {0.78, 0.8, 0.95, 0.94, 0.9, 1, 1, 1, 0.96}, // 16 GiB
}};

/// Small messages (1 < bytes < 1 MiB) skip the bandwidth model: SimAI v1.6's
/// `Layer::compute_time` (astra-sim/workload/Layer.cc) charges a fixed time per group size, and
/// 0 for a group size not listed.
struct small_message_time {
    long long ranks = 0;
    unsigned long long ns = 0;
};
inline constexpr std::array<small_message_time, 7> small_message_times{{
    {2, 10000},
    {4, 12000},
    {8, 15000},
    {16, 66000},
    {32, 135000},
    {64, 200000},
    {128, 320000},
}};

} // namespace pipesched::simai
