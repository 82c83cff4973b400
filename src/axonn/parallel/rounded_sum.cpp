#include "axonn/parallel/rounded_sum.h"

#include "axonn/core/error.h"

namespace axonn {

RoundedSum::RoundedSum(RoundedSum&& other) noexcept
    : collective_(std::move(other.collective_)), backend_(std::exchange(other.backend_, nullptr)),
      widened_(other.widened_), received_(other.received_), numel_(other.numel_) {}

RoundedSum& RoundedSum::operator=(RoundedSum&& other) noexcept {
    collective_ = std::move(other.collective_);
    backend_ = std::exchange(other.backend_, nullptr);
    widened_ = other.widened_;
    received_ = other.received_;
    numel_ = other.numel_;
    return *this;
}

void RoundedSum::wait() {
    collective_.wait();
    if (backend_ != nullptr) backend_->convert(widened_, DType::f32, received_, DType::bf16, numel_);
    backend_ = nullptr;
}

bool rounds(Communicator const& group, DType wire) {
    AXONN_INVARIANT(wire == DType::f32 || wire == DType::bf16, "sums travel as f32 or bf16, not {}", dtype_name(wire));
    return wire == DType::bf16 && group.size() > 1;
}

RoundedSum start_rounded_all_reduce(Backend& backend, Communicator& group, DType wire, float* data, std::size_t count,
                                    bfloat16* staging) {
    if (!rounds(group, wire)) return {group.start_all_reduce(data, count), nullptr, nullptr, nullptr, 0};
    auto const numel = static_cast<std::int64_t>(count);
    backend.convert(staging, DType::bf16, data, DType::f32, numel);
    return {group.start_all_reduce(staging, count), &backend, data, staging, numel};
}

void rounded_all_reduce(Backend& backend, Communicator& group, DType wire, float* data, std::size_t count,
                        bfloat16* staging) {
    if (rounds(group, wire)) {
        start_rounded_all_reduce(backend, group, wire, data, count, staging).wait();
    } else {
        group.all_reduce(data, count);
    }
}

RoundedSum start_rounded_reduce_scatter(Backend& backend, Communicator& group, DType wire, float const* send,
                                        float* recv, std::size_t count, bfloat16* sent, bfloat16* received) {
    if (!rounds(group, wire)) return {group.start_reduce_scatter(send, recv, count), nullptr, nullptr, nullptr, 0};
    auto const numel = static_cast<std::int64_t>(count);
    backend.convert(sent, DType::bf16, send, DType::f32, numel * group.size());
    return {group.start_reduce_scatter(sent, received, count), &backend, recv, received, numel};
}

}  // namespace axonn
