// The set of Chakra trace files ASTRA-sim reads for --workload-configuration=PREFIX:
// PREFIX.0.et, PREFIX.1.et, ... (shared by `check PREFIX` and `chakra --read PREFIX`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <pipesched/chakra/trace.hpp>

namespace pipesched::cli {

/// PREFIX.<rank>.et
std::string chakra_file(std::string_view prefix, std::size_t rank);

/// How many of PREFIX.0.et, PREFIX.1.et, ... exist before the first that does not; a usage
/// error naming PREFIX.0.et when even it does not.
std::size_t chakra_rank_files(std::string_view prefix);

/// One rank's file, parsed; a usage error naming the file and the place of a problem.
pipesched::chakra::trace read_chakra_file(const std::string& file);

/// A usage error naming the missing file when a p2p node of `rank` names a peer at or beyond
/// `ranks` (the files found): that file is missing, which is what went wrong, rather than the
/// node.
void require_peer_files(std::string_view prefix, std::size_t rank, const pipesched::chakra::trace& t,
                        std::size_t ranks);

} // namespace pipesched::cli
