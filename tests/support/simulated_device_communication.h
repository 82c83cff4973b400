// Device collectives for the simulated device (simulated_device_backend.h), so that the model's device path runs
// on a grid of several ranks on any machine: each group's device collectives run on a Communicator of their own,
// over a duplicate of the group's MPI communicator, with the non-blocking calls completed by the handle's wait as
// NCCL's are. It records what it was given, so that a test sees which collectives took the device's way.
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/comm/device_collectives.h"
#include "axonn/comm/grid.h"
#include "support/simulated_device_backend.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace axonn::testing {

class SimulatedDeviceCommunication final : public DeviceCommunication {
public:
    bool holds(void const* pointer) const override { return SimulatedDeviceBackend::allocated(pointer); }
    std::unique_ptr<DeviceGroup> connect(MPI_Comm group) override {
        MPI_Comm duplicate = MPI_COMM_NULL;
        MPI_Comm_dup(group, &duplicate);
        return std::make_unique<SimulatedGroup>(*this, std::make_unique<Communicator>(
                                                           duplicate, Group::world, traffic_, progress_, CommOptions{}));
    }
    void copy(void* to, void const* from, std::size_t bytes) override {
        std::memmove(to, from, bytes);
    }

    // The bytes of each device collective issued, as the Communicator's traffic log counts them.
    std::vector<std::uint64_t> collective_bytes;

private:
    // A collective in flight on the inner communicator (or done: the blocking maximum and minimum).
    class Completion final : public DeviceCompletion {
    public:
        explicit Completion(Collective collective) : collective_(std::move(collective)) {}
        void wait() override { collective_.wait(); }
        void abandon() noexcept override {}  // the inner handle, destroyed while unwinding, gives up on its own

    private:
        Collective collective_;
    };

    class SimulatedGroup final : public DeviceGroup {
    public:
        SimulatedGroup(SimulatedDeviceCommunication& owner, std::unique_ptr<Communicator> inner)
            : owner_(owner), inner_(std::move(inner)) {}

        std::unique_ptr<DeviceCompletion> all_reduce(void* data, std::size_t count, DType element,
                                                     Reduction reduction) override {
            record(count, element);
            if (reduction == Reduction::sum) return done(inner_->start_all_reduce(data, element, count));
            inner_->all_reduce(data, element, count, reduction);
            return done(Collective());
        }
        std::unique_ptr<DeviceCompletion> all_gather(void const* send, void* recv, std::size_t count_per_rank,
                                                     DType element) override {
            record(count_per_rank * static_cast<std::size_t>(inner_->size()), element);
            return done(inner_->start_all_gather(send, recv, element, count_per_rank));
        }
        std::unique_ptr<DeviceCompletion> reduce_scatter(void const* send, void* recv, std::size_t count_per_rank,
                                                         DType element) override {
            record(count_per_rank * static_cast<std::size_t>(inner_->size()), element);
            return done(inner_->start_reduce_scatter(send, recv, element, count_per_rank));
        }

    private:
        void record(std::size_t elements, DType element) {
            owner_.collective_bytes.push_back(elements * dtype_size(element));
        }
        static std::unique_ptr<DeviceCompletion> done(Collective collective) {
            return std::make_unique<Completion>(std::move(collective));
        }
        SimulatedDeviceCommunication& owner_;
        std::unique_ptr<Communicator> inner_;
    };

    TrafficLog traffic_;       // the inner communicators' own, not the grid's
    // Likewise; progressed in the handles' waits only, as the tests need the results, not the overlap.
    ProgressEngine progress_{false};
};

}  // namespace axonn::testing
