// NCCL's collectives on one GPU (comm/nccl/): the lent machine has a single GPU, and NCCL gives every rank a GPU
// of its own, so these run a communicator of one rank. They check what one GPU can: which pointers are device
// memory, each collective and element type through NCCL (a group of one leaves a sum as it was and copies a
// gather's or scatter's input), that a collective reads what the compute stream wrote just before it, and that a
// grid's groups of one copy on the GPU. Several ranks (the sums themselves) need several GPUs: docs/GPU.md.
//
// Skipped, and counted as skipped, where no CUDA GPU is visible.
#include "axonn/comm/grid.h"
#include "axonn/comm/nccl/nccl_communication.h"
#include "axonn/kernels/cuda/cuda_backend.h"
#include "axonn/kernels/cuda/gpu_choice.h"
#include "axonn/parallel/device_communication.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace axonn {
namespace {

class Nccl : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cuda::device_present()) GTEST_SKIP() << "no CUDA GPU visible";
        backend_ = std::make_unique<CudaBackend>(DType::f32, cuda::local_device());
        nccl_ = std::make_unique<NcclCommunication>(backend_->stream(), backend_->device());
    }

    template <typename T>
    Tensor upload(std::vector<T> const& values, DType dtype) {
        Tensor tensor({static_cast<std::int64_t>(values.size())}, dtype, Memory::device);
        backend_->copy_from_host(tensor.raw_data(), values.data(), static_cast<std::int64_t>(values.size() * sizeof(T)));
        return tensor;
    }
    template <typename T>
    std::vector<T> download(Tensor const& tensor) {
        std::vector<T> values(static_cast<std::size_t>(tensor.numel()));
        backend_->copy_to_host(values.data(), tensor.raw_data(), static_cast<std::int64_t>(values.size() * sizeof(T)));
        return values;
    }

    std::unique_ptr<CudaBackend> backend_;
    std::unique_ptr<NcclCommunication> nccl_;
};

TEST_F(Nccl, KnowsDeviceMemoryFromHostMemory) {
    Tensor const on_device = upload(std::vector<float>(64, 1.0f), DType::f32);
    std::vector<float> const on_host(64);
    double const scalar = 0;
    EXPECT_TRUE(nccl_->holds(on_device.raw_data()));
    EXPECT_TRUE(nccl_->holds(static_cast<float const*>(on_device.raw_data()) + 17));
    EXPECT_FALSE(nccl_->holds(on_host.data()));
    EXPECT_FALSE(nccl_->holds(&scalar));
}

TEST_F(Nccl, EveryCollectiveOfOneRank) {
    if (!NcclCommunication::built_with_nccl()) GTEST_SKIP() << "this build has no NCCL";
    std::unique_ptr<DeviceGroup> const group = nccl_->connect(MPI_COMM_SELF);
    std::vector<float> const values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
    Tensor sum = upload(values, DType::f32);
    group->all_reduce(sum.raw_data(), values.size(), DType::f32, Reduction::sum)->wait();
    EXPECT_EQ(download<float>(sum), values);

    std::vector<double> const doubles = {0.5, -4.0, 1e300};
    Tensor maximum = upload(doubles, DType::f64), minimum = upload(doubles, DType::f64);
    group->all_reduce(maximum.raw_data(), doubles.size(), DType::f64, Reduction::max)->wait();
    group->all_reduce(minimum.raw_data(), doubles.size(), DType::f64, Reduction::min)->wait();
    EXPECT_EQ(download<double>(maximum), doubles);
    EXPECT_EQ(download<double>(minimum), doubles);

    Tensor const send = upload(values, DType::f32);
    Tensor gathered({static_cast<std::int64_t>(values.size())}, DType::f32, Memory::device);
    group->all_gather(send.raw_data(), gathered.raw_data(), values.size(), DType::f32)->wait();
    EXPECT_EQ(download<float>(gathered), values);

    std::vector<std::uint16_t> const bf16_bits = {0x3f80, 0xc000, 0x4049};  // 1, -2, 3.140625
    Tensor const bf16_send = upload(bf16_bits, DType::bf16);
    Tensor scattered({3}, DType::bf16, Memory::device);
    group->reduce_scatter(bf16_send.raw_data(), scattered.raw_data(), 3, DType::bf16)->wait();
    EXPECT_EQ(download<std::uint16_t>(scattered), bf16_bits);
}

TEST_F(Nccl, ACollectiveReadsWhatTheComputeStreamWroteBeforeIt) {
    if (!NcclCommunication::built_with_nccl()) GTEST_SKIP() << "this build has no NCCL";
    std::unique_ptr<DeviceGroup> const group = nccl_->connect(MPI_COMM_SELF);
    constexpr std::int64_t n = 1 << 22;  // a collective not ordered after the kernel could read zeros
    Tensor const a = upload(std::vector<float>(n, 1.0f), DType::f32), b = upload(std::vector<float>(n, 2.0f), DType::f32);
    Tensor written({n}, DType::f32, Memory::device), gathered({n}, DType::f32, Memory::device);
    backend_->zero(written.raw_data(), n * 4);
    backend_->synchronize();
    backend_->residual_forward(static_cast<float*>(written.raw_data()), static_cast<float const*>(a.raw_data()),
                               static_cast<float const*>(b.raw_data()), n);  // queued, not finished
    group->all_gather(written.raw_data(), gathered.raw_data(), n, DType::f32)->wait();
    EXPECT_EQ(download<float>(gathered), std::vector<float>(n, 3.0f));
}

TEST_F(Nccl, AGridsGroupsOfOneCopyOnTheGpu) {
    ProcessGrid grid(MPI_COMM_SELF, GridShape{}, {Axis::x, Axis::y, Axis::z, Axis::data},
                     CommOptions{.device = device_communication(*backend_)});
    std::vector<float> const values = {4.0f, 5.0f, 6.0f};
    Tensor const send = upload(values, DType::f32);
    Tensor received({3}, DType::f32, Memory::device);
    grid.comm(Group::z).start_all_gather(static_cast<float const*>(send.raw_data()),
                                         static_cast<float*>(received.raw_data()), 3).wait();
    EXPECT_EQ(download<float>(received), values);
}

}  // namespace
}  // namespace axonn
