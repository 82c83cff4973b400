// The process's address space under `ulimit -v` (RLIMIT_AS), where every mapping counts against the limit: MPI's and
// OpenMP's start-up, thread stacks, and the buffers oneDNN allocates inside a GEMM without checking that it got them
// (a run whose tensors left it a few MiB under the limit crashed inside dnnl_sgemm). Without a limit, nothing here
// refuses anything.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace axonn {

// The least address space a command starts with: MPI, its threads and the libraries mapped (below about 70 MiB,
// MPI_Init printed its own abort of many lines, or the signal thread could not start), and room for a small run.
constexpr std::size_t least_address_space = std::size_t{256} << 20;
// What a command keeps free beyond its tensors, for the GEMM library's own buffers and code.
constexpr std::size_t address_space_headroom = std::size_t{64} << 20;

// Refuses a limit below least_address_space, naming it and the fix: for main, before MPI starts.
void require_enough_address_space();

// Where `ulimit -v` leaves less than address_space_headroom beyond what the process has mapped now and `more`
// bytes it is about to map: why, naming the limit and the fix; nothing without a limit or with room.
std::optional<std::string> address_space_shortfall(std::size_t more);

}  // namespace axonn
