// SimAI's analytical report (simai/analytical_report.hpp) against numbers measured from the
// real SimAI_analytical, aliyun/SimAI v1.6 (f5efb5a9), built as tests/data/simai/README.md
// describes and run from a folder holding astra-sim-alibabacloud/inputs/ratio/*.csv:
//
//     SimAI_analytical <arguments of each entry below>
//
// Each entry keeps the exact arguments, the size and FNV-1a-64 hash of the EndToEnd CSV SimAI
// wrote, and its totals line verbatim. The test replays the same arguments through
// parse_simai_arguments and checks that pipesched writes the same CSV byte for byte.
#include <doctest/doctest.h>

#include "simai_data.hpp"

#include <pipesched/simai/analytical_network.hpp>
#include <pipesched/simai/analytical_report.hpp>
#include <pipesched/simai/ratio_tables.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace sm = pipesched::simai;
using pipesched_test::load_simai_workload;
using pipesched_test::read_simai_data;

namespace {

std::uint64_t fnv1a64(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325u;
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3u;
    }
    return h;
}

std::string line_of(const std::string& text, std::size_t n) { // 0-based
    std::size_t begin = 0;
    for (std::size_t i = 0; i < n; ++i) begin = text.find('\n', begin) + 1;
    return text.substr(begin, text.find('\n', begin) - begin);
}

struct measured_run {
    std::string_view arguments;
    std::size_t csv_bytes;
    std::uint64_t csv_fnv1a64;
    std::string_view totals_line;
};

// Measured 2026-12-03 with SimAI_analytical v1.6 (f5efb5a9); the .g4 runs use the arguments of
// the issue ("-g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25") on every file, the others the file's own
// GPU count and varied servers, bandwidths, GPU/NIC types and overlap ratios.
const measured_run measured_runs[] = {
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.full- -g 32 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5",
     232712, 0xfdd5d36be392622fu,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.full-, 21803 (0.91%), 107976 (4.53%), 192885 (8.09%), 102722 (4.31%), 0 (0.00%), 218836 (9.17%), 1741179 (72.99%), 425386 (17.83%), 2385400"},
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.g4- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     232659, 0x59ca3f7c6eed4282u,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.g4-, 0 (0.00%), 0 (0.00%), 345473 (9.83%), 1067976 (30.40%), 0 (0.00%), 358531 (10.21%), 1741179 (49.56%), 1413449 (40.23%), 3513159"},
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.gps16- -g 32 -g_p_s 16 -n_p_s 16 -nv 400 -nic 50",
     232713, 0x2b75bca4e171f920u,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.gps16-, 10574 (0.46%), 52368 (2.29%), 173811 (7.60%), 92450 (4.04%), 0 (0.00%), 215172 (9.41%), 1741179 (76.18%), 329204 (14.40%), 2285554"},
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.gps4- -g 32 -g_p_s 4 -n_p_s 4 -g_type H800 -nic_t bf3",
     229946, 0x202cbe16e8cdc545u,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.gps4-, 43606 (1.44%), 107976 (3.57%), 418804 (13.83%), 428856 (14.16%), 0 (0.00%), 287791 (9.50%), 1741179 (57.50%), 999241 (33.00%), 3028211"},
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.h100- -g 32 -g_p_s 8 -n_p_s 8 -g_type H100 -nic_t cx6",
     232713, 0x72f5ae9b8949bbdau,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.h100-, 44998 (1.79%), 222843 (8.86%), 187329 (7.45%), 99731 (3.97%), 0 (0.00%), 217768 (8.66%), 1741179 (69.26%), 554901 (22.07%), 2513848"},
    {"-w aicb_deepseek16b_tp2_pp2_ep4_ga8.txt -r aicb_deepseek16b_tp2_pp2_ep4_ga8.ovl- -g 32 -g_p_s 4 -n_p_s 4 -nv 300 -nic 50 -dp_o 0.5 -tp_o 0.25 -ep_o 0.75 -pp_o 0.5",
     231048, 0x4d7de24c431c563au,
     "aicb_deepseek16b_tp2_pp2_ep4_ga8.ovl-, 21149 (0.85%), 52368 (2.11%), 173272 (6.99%), 103997 (4.19%), 125000 (5.04%), 262754 (10.60%), 1741179 (70.22%), 350787 (14.15%), 2479719"},
    {"-w aicb_gpt13b_tp8_pp2_ga16.txt -r aicb_gpt13b_tp8_pp2_ga16.full- -g 128 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5",
     110248, 0x3d0f5edbffcbeb7au,
     "aicb_gpt13b_tp8_pp2_ga16.full-, 52803 (26.50%), 0 (0.00%), 146015 (73.27%), 0 (0.00%), 0 (0.00%), 456 (0.23%), 4 (0.00%), 198818 (99.77%), 199278"},
    {"-w aicb_gpt13b_tp8_pp2_ga16.txt -r aicb_gpt13b_tp8_pp2_ga16.g4- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     112826, 0xb683d735ba4d43a7u,
     "aicb_gpt13b_tp8_pp2_ga16.g4-, 0 (0.00%), 0 (0.00%), 1841173 (99.69%), 0 (0.00%), 0 (0.00%), 5754 (0.31%), 4 (0.00%), 1841173 (99.69%), 1846931"},
    {"-w aicb_gpt13b_tp8_pp2_ga16.txt -r aicb_gpt13b_tp8_pp2_ga16.gps16- -g 128 -g_p_s 16 -n_p_s 16 -nv 400 -nic 50",
     110251, 0x0718fb6a036d26e9u,
     "aicb_gpt13b_tp8_pp2_ga16.gps16-, 25609 (16.27%), 0 (0.00%), 131424 (83.47%), 0 (0.00%), 0 (0.00%), 411 (0.26%), 4 (0.00%), 157033 (99.74%), 157448"},
    {"-w aicb_gpt13b_tp8_pp2_ga16.txt -r aicb_gpt13b_tp8_pp2_ga16.h100- -g 128 -g_p_s 8 -n_p_s 8 -g_type H100 -nic_t cx6",
     110251, 0x6a0e806b1f92f016u,
     "aicb_gpt13b_tp8_pp2_ga16.h100-, 108976 (43.38%), 0 (0.00%), 141766 (56.44%), 0 (0.00%), 0 (0.00%), 443 (0.18%), 4 (0.00%), 250742 (99.82%), 251189"},
    {"-w aicb_gpt13b_tp8_pp2_ga16.txt -r aicb_gpt13b_tp8_pp2_ga16.ovl- -g 128 -g_p_s 4 -n_p_s 4 -nv 300 -nic 50 -dp_o 0.5 -tp_o 0.25 -ep_o 0.75 -pp_o 0.5",
     110255, 0x061e036dd6ed66bfu,
     "aicb_gpt13b_tp8_pp2_ga16.ovl-, 25609 (1.37%), 0 (0.00%), 278397 (14.91%), 0 (0.00%), 1562500 (83.66%), 1160 (0.06%), 4 (0.00%), 304006 (16.28%), 1867670"},
    {"-w aicb_gpt7b_tp8_pp1_ga8.txt -r aicb_gpt7b_tp8_pp1_ga8.full- -g 64 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5",
     87252, 0x4083c423d240ee66u,
     "aicb_gpt7b_tp8_pp1_ga8.full-, 51393 (36.56%), 0 (0.00%), 89184 (63.44%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 3 (0.00%), 140577 (100.00%), 140580"},
    {"-w aicb_gpt7b_tp8_pp1_ga8.txt -r aicb_gpt7b_tp8_pp1_ga8.g4- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     89303, 0x1d8ab0b101889402u,
     "aicb_gpt7b_tp8_pp1_ga8.g4-, 0 (0.00%), 0 (0.00%), 1261828 (100.00%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 3 (0.00%), 1261828 (100.00%), 1261831"},
    {"-w aicb_gpt7b_tp8_pp1_ga8.txt -r aicb_gpt7b_tp8_pp1_ga8.gps16- -g 64 -g_p_s 16 -n_p_s 16 -nv 400 -nic 50",
     87255, 0x9ae2cc5c8322156cu,
     "aicb_gpt7b_tp8_pp1_ga8.gps16-, 24926 (23.69%), 0 (0.00%), 80276 (76.30%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 3 (0.00%), 105202 (100.00%), 105205"},
    {"-w aicb_gpt7b_tp8_pp1_ga8.txt -r aicb_gpt7b_tp8_pp1_ga8.h100- -g 64 -g_p_s 8 -n_p_s 8 -g_type H100 -nic_t cx6",
     87255, 0x685de5484e1dd1cbu,
     "aicb_gpt7b_tp8_pp1_ga8.h100-, 106066 (55.05%), 0 (0.00%), 86590 (44.94%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 3 (0.00%), 192656 (100.00%), 192659"},
    {"-w aicb_gpt7b_tp8_pp1_ga8.txt -r aicb_gpt7b_tp8_pp1_ga8.ovl- -g 64 -g_p_s 4 -n_p_s 4 -nv 300 -nic 50 -dp_o 0.5 -tp_o 0.25 -ep_o 0.75 -pp_o 0.5",
     87252, 0x64dfdb178ff02d82u,
     "aicb_gpt7b_tp8_pp1_ga8.ovl-, 24926 (11.94%), 0 (0.00%), 183771 (88.06%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 3 (0.00%), 208696 (100.00%), 208700"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.full- -g 9216 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5",
     165690, 0xa4a358377c05c0c3u,
     "aicb_moe_tp2_ep16_pp12_ga24.full-, 40332 (0.53%), 1067010 (14.14%), 326686 (4.33%), 1222811 (16.21%), 0 (0.00%), 345984 (4.59%), 4542795 (60.20%), 2656839 (35.21%), 7545619"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.g4- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     166825, 0xffdc2aeb93ed507du,
     "aicb_moe_tp2_ep16_pp12_ga24.g4-, 0 (0.00%), 0 (0.00%), 587981 (7.05%), 2757446 (33.07%), 0 (0.00%), 448733 (5.38%), 4542795 (54.49%), 3345427 (40.13%), 8336956"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.gps16- -g 9216 -g_p_s 16 -n_p_s 16 -nv 400 -nic 50",
     165688, 0x48a482f9ce063161u,
     "aicb_moe_tp2_ep16_pp12_ga24.gps16-, 19561 (0.28%), 1035000 (14.81%), 294024 (4.21%), 778378 (11.14%), 0 (0.00%), 318669 (4.56%), 4542795 (65.00%), 2126963 (30.44%), 6988427"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.gps2- -g 9216 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     166894, 0xe6d678ed60a25087u,
     "aicb_moe_tp2_ep16_pp12_ga24.gps2-, 312974 (2.92%), 2070000 (19.31%), 587981 (5.48%), 2757446 (25.72%), 0 (0.00%), 448733 (4.19%), 4542795 (42.38%), 5728402 (53.44%), 10719930"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.h100- -g 9216 -g_p_s 8 -n_p_s 8 -g_type H100 -nic_t cx6",
     165689, 0xff9c0a74f5edeb4eu,
     "aicb_moe_tp2_ep16_pp12_ga24.h100-, 83238 (0.83%), 2202128 (21.83%), 317173 (3.14%), 2523674 (25.01%), 0 (0.00%), 419973 (4.16%), 4542795 (45.03%), 5126213 (50.81%), 10088981"},
    {"-w aicb_moe_tp2_ep16_pp12_ga24.txt -r aicb_moe_tp2_ep16_pp12_ga24.ovl- -g 9216 -g_p_s 4 -n_p_s 4 -nv 300 -nic 50 -dp_o 0.5 -tp_o 0.25 -ep_o 0.75 -pp_o 0.5",
     165518, 0x0f36930d5fec1084u,
     "aicb_moe_tp2_ep16_pp12_ga24.ovl-, 39122 (0.16%), 517500 (2.15%), 294007 (1.22%), 354610 (1.47%), 18000000 (74.66%), 360899 (1.50%), 4542795 (18.84%), 1205239 (5.00%), 24108933"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.a800- -g 4 -g_p_s 2 -n_p_s 2 -g_type A800 -nic 25",
     2525, 0xea7a653e58bb8667u,
     "seed_tp2_ga2.a800-, 8877 (7.56%), 0 (0.00%), 1532 (1.30%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (91.14%), 10409 (8.86%), 117456"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.full- -g 4 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5",
     2523, 0xd29d1a6f9f3e0a10u,
     "seed_tp2_ga2.full-, 1144 (1.05%), 0 (0.00%), 720 (0.66%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (98.29%), 1864 (1.71%), 108911"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.g4- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25",
     2523, 0x5471e30493ef5640u,
     "seed_tp2_ga2.g4-, 8877 (7.58%), 0 (0.00%), 1239 (1.06%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (91.37%), 10116 (8.63%), 117163"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.g8- -g 8 -g_p_s 4 -n_p_s 2 -nv 100 -nic 12.5",
     2530, 0x90856c5d982eab58u,
     "seed_tp2_ga2.g8-, 26631 (19.57%), 0 (0.00%), 2409 (1.77%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (78.66%), 29040 (21.34%), 136087"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.gps16- -g 4 -g_p_s 16 -n_p_s 16 -nv 400 -nic 50",
     2523, 0x3e96feb44cbf7760u,
     "seed_tp2_ga2.gps16-, 555 (0.51%), 0 (0.00%), 655 (0.60%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (98.88%), 1210 (1.12%), 108257"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.h100- -g 4 -g_p_s 8 -n_p_s 8 -g_type H100 -nic_t cx6",
     2523, 0x6be594d678476d98u,
     "seed_tp2_ga2.h100-, 2361 (2.14%), 0 (0.00%), 701 (0.64%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (97.22%), 3062 (2.78%), 110109"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.notype- -g 4 -g_p_s 2 -n_p_s 2",
     2526, 0xa4e31dc08898367eu,
     "seed_tp2_ga2.notype-, 4576 (4.06%), 0 (0.00%), 1045 (0.93%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (95.01%), 5620 (4.99%), 112667"},
    {"-w seed_tp2_ga2.txt -r seed_tp2_ga2.ovl- -g 4 -g_p_s 4 -n_p_s 4 -nv 300 -nic 50 -dp_o 0.5 -tp_o 0.25 -ep_o 0.75 -pp_o 0.5",
     2516, 0x7e875af8b7cf2f5au,
     "seed_tp2_ga2.ovl-, 1110 (1.02%), 0 (0.00%), 637 (0.59%), 0 (0.00%), 0 (0.00%), 0 (0.00%), 107047 (98.39%), 1747 (1.61%), 108794"},
};

struct replay {
    sm::simai_command command;
    sm::workload workload;
    sm::analytical_result result;
    std::string csv;
};

replay run_like_simai(std::string_view arguments) {
    replay r{};
    r.command = sm::parse_simai_arguments(arguments);
    REQUIRE_MESSAGE(r.command, *r.command.error);
    r.workload = load_simai_workload(r.command.workload);
    r.result = sm::report(r.workload, r.command.options);
    REQUIRE_MESSAGE(r.result, describe(*r.result.error, &r.workload));
    r.csv = sm::end_to_end_csv(r.result.value, r.command.result_name);
    return r;
}

} // namespace

TEST_CASE("simai analytical report: byte for byte what SimAI_analytical v1.6 writes") {
    for (const measured_run& m : measured_runs) {
        CAPTURE(m.arguments);
        const replay r = run_like_simai(m.arguments);
        CHECK(line_of(r.csv, 1) == m.totals_line);
        CHECK(r.csv.size() == m.csv_bytes);
        CHECK(fnv1a64(r.csv) == m.csv_fnv1a64);
        CHECK(r.result.value.rows.size() == r.workload.rows.size());
    }
}

TEST_CASE("simai analytical report: the user's seed workload, line by line") {
    const replay r = run_like_simai("-w seed_tp2_ga2.txt -r seed_tp2_ga2- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25");
    const sm::analytical_totals& t = r.result.value.totals;
    // SimAI: "seed_tp2_ga2-, 8877 (7.58%), 0 (0.00%), 1239 (1.06%), 0 (0.00%), 0 (0.00%),
    // 0 (0.00%), 107047 (91.37%), 10116 (8.63%), 117163"
    CHECK(line_of(r.csv, 1) == "seed_tp2_ga2-, 8877 (7.58%), 0 (0.00%), 1239 (1.06%), 0 (0.00%), 0 (0.00%), "
                               "0 (0.00%), 107047 (91.37%), 10116 (8.63%), 117163");
    CHECK(std::lround(t.total_time_us) == 117163);
    CHECK(t.bubble_time_us == 0.0); // pp = 1
    CHECK(t.total_time_us == doctest::Approx(t.total_comp_us + t.total_exposed_comm_us));
    // Rows as SimAI printed them (grad_gather, layernorm, moe_grad_norm1, attention_layer,
    // cross_entropy1).
    CHECK(line_of(r.csv, 3) == "grad_gather,Analytical_test,0,0,0,0,2959,0,0,-nan,0.00,2959,50.00,25.00,0,-nan,0.00");
    CHECK(line_of(r.csv, 6) == "layernorm,Analytical_test,0,0,0,0,0,740,0,-nan,0.00,0,-nan,0.00,740,200.00,200.00");
    CHECK(line_of(r.csv, 8) == "moe_grad_norm1,Analytical_test,0,0,0,0,0,0,0,-nan,0.00,0,-nan,-nan,0,-nan,0.00");
    CHECK(line_of(r.csv, 11) ==
          "attention_layer,Analytical_test,1820,1820,1820,39,0,0,39,200.00,200.00,0,-nan,0.00,0,-nan,0.00");
    CHECK(line_of(r.csv, 20) == "cross_entropy1,Analytical_test,0,0,0,10,0,0,10,1.53,1.53,0,-nan,0.00,0,-nan,0.00");

    // By hand: grad_gather's 158859264-byte data-parallel all-gather over 2 ranks at 25 GiB/s
    // is 158859264 / 2^30 / 25 * 1e9 * (2-1)/2 = 2958984.375 ns, truncated.
    const sm::report_row& gather = r.result.value.rows[0];
    CHECK(gather.weight_grad.comm_ns == 2958984);
    CHECK(gather.weight_grad.group_size == 2);
    // The tensor-parallel all-reduce of 8388608 bytes over 2 GPUs at 200: x2 for all-reduce,
    // x1/2 ring factor: 8388608 / 2^30 / 200 * 1e9 = 39062.5 ns.
    CHECK(r.result.value.rows[8].forward.comm_ns == 39062);
    // 16384 bytes is a small message: SimAI's fixed 10 us at 2 ranks, no bandwidth.
    CHECK(r.result.value.rows[17].forward.comm_ns == 10000);
    CHECK(r.result.value.groups.dp == 2);
    CHECK(r.result.value.notes.empty());
}

TEST_CASE("simai analytical report: degenerate -g is reproduced and explained") {
    // -g 4 for a tp 8 x pp 2 workload: SimAI's data-parallel size is 4 / 16 = 0, so it charges
    // no data-parallel communication (and prints inf / -inf bandwidths for those rows).
    const replay r = run_like_simai("-w aicb_gpt13b_tp8_pp2_ga16.txt -r x- -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25");
    CHECK(r.result.value.groups.dp == 0);
    CHECK(r.result.value.totals.expose_dp_comm_us == 0.0);
    CHECK(line_of(r.csv, 3) == "grad_norm,Analytical_test,0,0,0,26304,0,0,26304,55.63,48.68,0,inf,-inf,0,-nan,0.00");
    REQUIRE(!r.result.value.notes.empty());
    CHECK(r.result.value.notes[0].find("data-parallel group size is 0") != std::string::npos);
}

TEST_CASE("simai analytical report: configurations where SimAI's numbers are meaningless are refused") {
    const sm::workload seed = load_simai_workload("seed_tp2_ga2.txt");
    SUBCASE("-n_p_s 1 with tp 2: 1/2 NICs per rank is 0, bandwidth -1") {
        // SimAI prints "grad_gather,...,18446744073635576,0.00,0.00,..." for this command
        // (-w seed_tp2_ga2.txt -g 4 -g_p_s 2 -n_p_s 1 -nv 200 -nic 25).
        const sm::simai_command cmd = sm::parse_simai_arguments("-g 4 -g_p_s 2 -n_p_s 1 -nv 200 -nic 25");
        REQUIRE(cmd);
        const sm::analytical_result r = sm::report(seed, cmd.options);
        REQUIRE(!r);
        CHECK(r.error->row == 0);
        CHECK(r.error->column == sm::phase::weight_grad);
        const std::string text = describe(*r.error, &seed);
        CHECK(text.find("row 0 (line 3, grad_gather), weight_grad") == 0);
        CHECK(text.find("-1") != std::string::npos);
        CHECK(text.find("NICs per node is 0") != std::string::npos);
    }
    SUBCASE("bad parameters") {
        sm::analytical_options o{};
        o.gpus_per_server = 0;
        CHECK(sm::report(seed, o).error->message.find("--gpus-per-server") != std::string::npos);
        o = {};
        o.pp_overlap = 0.0f;
        CHECK(sm::report(seed, o).error->message.find("pp overlap") != std::string::npos);
        o = {};
        o.dp_overlap = 1.5f;
        CHECK(!sm::report(seed, o));
        o = {};
        o.gpu = sm::gpu_type::none; // no -nv and an unknown GPU type: no NVLink bandwidth
        const sm::analytical_result r = sm::report(seed, o);
        REQUIRE(!r);
        CHECK(r.error->message.find("no NVLink bandwidth") != std::string::npos);
    }
    SUBCASE("workloads SimAI cannot report") {
        sm::workload w = seed;
        w.header.checkpoints = std::vector<std::uint32_t>{3};
        CHECK(sm::report(w).error->message.find("checkpoints") != std::string::npos);
        w = seed;
        w.rows.clear();
        CHECK(!sm::report(w));
        w = seed;
        w.header.ep.reset();
        CHECK(sm::report(w).error->message.find("ep") != std::string::npos);
        w = seed;
        w.rows[0].weight_grad.bytes = 20000000000; // beyond the 16 GiB ratio tables? dp: ratio 1
        CHECK(sm::report(w)); // data-parallel collectives never read the tables
        w.rows[3].input_grad.kind = sm::collective::allgather; // tensor parallel: reads them
        w.rows[3].input_grad.bytes = 20000000000;
        const sm::analytical_result r = sm::report(w);
        REQUIRE(!r);
        CHECK(r.error->row == 3);
        CHECK(r.error->message.find("Data size out of range") != std::string::npos);
    }
    SUBCASE("SimAI's own flags, read strictly") {
        CHECK(!sm::parse_simai_arguments("-g"));
        CHECK(!sm::parse_simai_arguments("-g four"));
        CHECK(!sm::parse_simai_arguments("-busbw example/busbw.yaml"));
        CHECK(!sm::parse_simai_arguments("-nv 200GB"));
        const sm::simai_command c = sm::parse_simai_arguments("-g_type H800 -nic_t bf3 -pp_o 0.5 -v 1");
        REQUIRE(c);
        CHECK(c.options.gpu == sm::gpu_type::h800);
        CHECK(c.options.nic == sm::nic_type::bf3);
        CHECK(c.options.pp_overlap == 0.5f);
    }
}

TEST_CASE("simai analytical report: properties over the five files") {
    const char* files[] = {"seed_tp2_ga2.txt", "aicb_gpt7b_tp8_pp1_ga8.txt", "aicb_gpt13b_tp8_pp2_ga16.txt",
                           "aicb_deepseek16b_tp2_pp2_ep4_ga8.txt", "aicb_moe_tp2_ep16_pp12_ga24.txt"};
    std::mt19937 rng(12345);
    for (const char* file : files) {
        CAPTURE(file);
        const sm::workload w = load_simai_workload(file);
        sm::analytical_options o{};
        const sm::analytical_result base = sm::report(w, o);
        REQUIRE_MESSAGE(base, describe(*base.error, &w));
        const sm::analytical_totals& t = base.value.totals;
        CHECK(t.total_time_us == doctest::Approx(t.total_comp_us + t.total_exposed_comm_us + t.bubble_time_us +
                                                 t.expose_pp_comm_us));
        CHECK(t.total_exposed_comm_us == doctest::Approx(t.expose_dp_comm_us + t.expose_dp_ep_comm_us +
                                                         t.expose_tp_comm_us + t.expose_ep_comm_us));
        CHECK((w.header.pp == 1) == (t.bubble_time_us == 0.0));

        // Order-independent: the same rows in another order give the same totals (up to the
        // order of floating-point summation).
        sm::workload shuffled = w;
        std::shuffle(shuffled.rows.begin(), shuffled.rows.end(), rng);
        const sm::analytical_result s = sm::report(shuffled, o);
        REQUIRE(s);
        CHECK(s.value.totals.total_time_us == doctest::Approx(t.total_time_us).epsilon(1e-12));
        CHECK(s.value.totals.bubble_time_us == doctest::Approx(t.bubble_time_us).epsilon(1e-12));

        // Overlap ratio 1 hides that kind of communication completely, and changes nothing else.
        o.dp_overlap = 1.0f;
        o.tp_overlap = 1.0f;
        o.ep_overlap = 1.0f;
        const sm::analytical_result hidden = sm::report(w, o);
        REQUIRE(hidden);
        CHECK(hidden.value.totals.total_exposed_comm_us == 0.0);
        CHECK(hidden.value.totals.total_comp_us == t.total_comp_us);
        CHECK(hidden.value.totals.bubble_time_us == t.bubble_time_us); // the bubble uses total comm

        // Faster links never make a collective slower.
        sm::analytical_options fast{};
        fast.nvlink_gbps = 1000.0f;
        fast.nic_gbps = 400.0f;
        const sm::analytical_result quick = sm::report(w, fast);
        REQUIRE(quick);
        for (std::size_t i = 0; i < w.rows.size(); ++i) {
            for (const sm::phase p : {sm::phase::forward, sm::phase::input_grad, sm::phase::weight_grad}) {
                CHECK(quick.value.rows[i].column(p).comm_ns <= base.value.rows[i].column(p).comm_ns);
            }
        }
    }
}

TEST_CASE("simai ratio tables: the lookup SimAI's calbusbw.cc getValue does, by hand") {
    // Column by node count (1, 2, 4, ..., 128 -> columns 1..8, the marker 9 -> column 9, any
    // other count -> column 5), linear between the two rows around the size, divided by the
    // table's last row in that column; below the first size the first row, above the last none.
    namespace simai = pipesched::simai;
    const auto ratio = [](double bytes, std::int64_t nodes, const simai::ratio_table& t, float& out) {
        return simai::detail::ratio_value(bytes, nodes, t, out);
    };
    float r = 0.0f;
    REQUIRE(ratio(16777216.0, 1, simai::nic_ratio, r));
    CHECK(r == static_cast<float>(0.45 / 0.81));
    REQUIRE(ratio(25165824.0, 1, simai::nic_ratio, r)); // halfway between 16 MiB (0.45) and 32 MiB (0.55)
    CHECK(r == doctest::Approx(0.5 / 0.81));
    REQUIRE(ratio(1.0, 1, simai::nic_ratio, r)); // below the table: its first row
    CHECK(r == static_cast<float>(0.45 / 0.81));
    REQUIRE(ratio(16777216.0, 3, simai::nic_ratio, r)); // a count not in the list: column 5
    CHECK(r == static_cast<float>(0.05 / 0.96));
    REQUIRE(ratio(16777216.0, 9, simai::nic_ratio, r)); // the "Multi 16" marker: column 9
    CHECK(r == static_cast<float>(0.86 / 0.96));
    REQUIRE(ratio(16777216.0, 32, simai::nvlink_ratio, r)); // an empty cell reads as 1
    CHECK(r == 1.0f);
    REQUIRE(ratio(0.0, 4, simai::alltoall_ratio, r));
    CHECK(r == 1.0f);
    CHECK_FALSE(ratio(17179869184.0 * 2, 1, simai::nic_ratio, r)); // SimAI: "Data size out of range"
    // The sizes of the rows, the same in every table (ratio_sizes): 16 MiB, doubling to 16 GiB.
    for (std::size_t i = 0; i + 1 < simai::ratio_sizes.size(); ++i) CHECK(simai::ratio_sizes[i + 1] == 2 * simai::ratio_sizes[i]);
    CHECK(simai::ratio_sizes.front() == 16777216.0);
    CHECK(simai::ratio_sizes.back() == 17179869184.0);
    for (const simai::ratio_table* t : {&simai::nic_ratio, &simai::nvlink_ratio, &simai::alltoall_ratio}) {
        CHECK(t->size() == simai::ratio_sizes.size());
    }
}
