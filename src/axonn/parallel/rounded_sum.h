// fp32 sums whose elements travel in another type (bf16: half the bytes): the one place where a collective's data
// are rounded, moved and widened back. A sum rounds its fp32 input into a staging buffer, runs the collective
// there, and wait() widens the result into its fp32 destination, so the sum's partial results are rounded to the
// wire type (MPI's and NCCL's bf16 sums add in fp32 and round each partial result). With an f32 wire, or over a
// group of one rank, the collective runs on the fp32 data themselves and nothing is rounded. Conversions go
// through the backend: the buffers may be a device's.
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/kernels/backend.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace axonn {

// A rounded sum in flight; wait() completes it and widens its result (then the destination holds the sum).
class RoundedSum {
public:
    RoundedSum() = default;  // nothing in flight
    RoundedSum(RoundedSum&& other) noexcept;
    RoundedSum& operator=(RoundedSum&& other) noexcept;
    void wait();

private:
    friend RoundedSum start_rounded_all_reduce(Backend&, Communicator&, DType, float*, std::size_t, bfloat16*);
    friend RoundedSum start_rounded_reduce_scatter(Backend&, Communicator&, DType, float const*, float*, std::size_t,
                                                   bfloat16*, bfloat16*);
    RoundedSum(Collective collective, Backend* backend, float* widened, bfloat16 const* received, std::int64_t numel)
        : collective_(std::move(collective)), backend_(backend), widened_(widened), received_(received),
          numel_(numel) {}

    Collective collective_;
    Backend* backend_ = nullptr;          // null: nothing to widen
    float* widened_ = nullptr;            // [numel] the fp32 destination
    bfloat16 const* received_ = nullptr;  // [numel] the sum as it arrived
    std::int64_t numel_ = 0;
};

// Whether a sum over `group` with this wire type rounds (and so needs staging).
bool rounds(Communicator const& group, DType wire);

// data[count] = Σ over `group` of every rank's data[count], moved as `wire` (f32 or bf16); with bf16,
// staging[count] holds the rounded copy that travels.
[[nodiscard]] RoundedSum start_rounded_all_reduce(Backend& backend, Communicator& group, DType wire, float* data,
                                                  std::size_t count, bfloat16* staging);

// The same, blocking, for a sum whose result is needed at once.
void rounded_all_reduce(Backend& backend, Communicator& group, DType wire, float* data, std::size_t count,
                        bfloat16* staging);

// recv[count] = Σ over `group` of every rank's slice of send[size · count] that this rank's position names, moved
// as `wire`; with bf16, sent[size · count] holds the rounded send and received[count] what arrives.
[[nodiscard]] RoundedSum start_rounded_reduce_scatter(Backend& backend, Communicator& group, DType wire,
                                                      float const* send, float* recv, std::size_t count, bfloat16* sent,
                                                      bfloat16* received);

}  // namespace axonn
