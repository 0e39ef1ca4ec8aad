// The real SimAI/AICB workload files of tests/data/simai, read for the SimAI tests.
#pragma once

#include <doctest/doctest.h>

#include <pipesched/simai/parse.hpp>
#include <pipesched/simai/workload.hpp>

#include <fstream>
#include <sstream>
#include <string>

#ifndef PIPESCHED_SIMAI_DATA_DIR
#error "tests/CMakeLists.txt must define PIPESCHED_SIMAI_DATA_DIR"
#endif

namespace pipesched_test {

/// The bytes of tests/data/simai/<file>; fails the test if it cannot be opened.
inline std::string read_simai_data(const std::string& file) {
    const std::string path = std::string(PIPESCHED_SIMAI_DATA_DIR) + "/" + file;
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// tests/data/simai/<file> parsed; fails the test with the parser's message if it does not parse.
inline pipesched::simai::workload load_simai_workload(const std::string& file) {
    const pipesched::simai::parse_result r = pipesched::simai::parse_workload(read_simai_data(file));
    REQUIRE_MESSAGE(r, file << ": " << (r.error ? describe(*r.error) : std::string()));
    return r.value;
}

} // namespace pipesched_test
