// The named-tensor file that carries weights to and from the PyTorch oracle: round trip and corruption.
#include "axonn/core/error.h"
#include "axonn/io/tensor_file.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace axonn {
namespace {

namespace fs = std::filesystem;

TEST(TensorFile, RoundTripsEveryDtypeAndRejectsCorruption) {
    testing::TempDir const dir;
    fs::path const path = dir / "tensors.axt";
    NamedTensors tensors;
    Tensor weights({2, 3}, DType::f32);
    for (int i = 0; i < 6; ++i) weights.data<float>()[i] = 0.5f * i;
    Tensor ids({4}, DType::i32);
    ids.data<std::int32_t>()[3] = -7;
    Tensor scalar({}, DType::f64);
    scalar.data<double>()[0] = 3.25;
    tensors.emplace("weights", std::move(weights));
    tensors.emplace("ids", std::move(ids));
    tensors.emplace("scalar", std::move(scalar));
    write_tensor_file(path, tensors);

    NamedTensors const read = read_tensor_file(path);
    ASSERT_EQ(read.size(), 3u);
    EXPECT_EQ(read.at("weights").shape(), (Shape{2, 3}));
    EXPECT_EQ(read.at("weights").data<float>()[5], 2.5f);
    EXPECT_EQ(read.at("ids").data<std::int32_t>()[3], -7);
    EXPECT_EQ(read.at("scalar").data<double>()[0], 3.25);
    EXPECT_THROW(read.at("weights").data<double>(), InternalError);  // dtype is checked

    fs::resize_file(path, fs::file_size(path) - 1);
    EXPECT_THROW(read_tensor_file(path), Error);
    fs::remove(path);
    EXPECT_THROW(read_tensor_file(path), Error);
}

}  // namespace
}  // namespace axonn
