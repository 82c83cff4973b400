#include "axonn/io/tensor_file.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <array>
#include <cstring>

namespace axonn {
namespace {

constexpr std::array<char, 8> tensor_file_magic = {'A', 'X', 'O', 'N', 'N', 'T', 'N', 'S'};
constexpr std::uint32_t tensor_file_version = 1;

template <typename T> void write_value(AtomicFile& out, T value) { out.write(&value, sizeof(T)); }

// Reads a tensor file front to back; every count is checked against the bytes that remain.
class Reader {
public:
    explicit Reader(std::filesystem::path const& path)
        : file_(open_input_file(path, "tensor file", "check the path")),
          size_(static_cast<std::uint64_t>(file_.info.st_size)) {}
    template <typename T> T value() {
        T result{};
        bytes(&result, sizeof(T));
        return result;
    }
    void bytes(void* destination, std::uint64_t count) {
        AXONN_REQUIRE(count <= size_ - position_, "tensor file {} is truncated: rewrite it", file_.path.string());
        read_exactly(file_, position_, destination, count, "tensor file");
        position_ += count;
    }
    std::uint64_t remaining() const { return size_ - position_; }

private:
    InputFile file_;
    std::uint64_t size_;
    std::uint64_t position_ = 0;
};

}  // namespace

void write_tensor_file(std::filesystem::path const& path, NamedTensors const& tensors) {
    AtomicFile out(path, "tensor file");
    out.write(tensor_file_magic.data(), tensor_file_magic.size());
    write_value(out, tensor_file_version);
    write_value(out, static_cast<std::uint32_t>(tensors.size()));
    for (auto const& [name, tensor] : tensors) {
        write_value(out, static_cast<std::uint32_t>(name.size()));
        out.write(name.data(), name.size());
        write_value(out, static_cast<std::uint32_t>(tensor.dtype()));
        write_value(out, static_cast<std::uint32_t>(tensor.shape().size()));
        for (auto extent : tensor.shape()) write_value(out, static_cast<std::int64_t>(extent));
        out.write(tensor.raw_data(), tensor.bytes());
    }
    out.commit();
}

NamedTensors read_tensor_file(std::filesystem::path const& path) {
    Reader reader(path);
    std::array<char, 8> magic{};
    reader.bytes(magic.data(), magic.size());
    AXONN_REQUIRE(magic == tensor_file_magic, "{} is not an axonn tensor file (bad magic)", path.string());
    auto const version = reader.value<std::uint32_t>();
    AXONN_REQUIRE(version == tensor_file_version, "tensor file {} has version {}, this build reads version {}",
                  path.string(), version, tensor_file_version);
    auto const count = reader.value<std::uint32_t>();
    NamedTensors tensors;
    for (std::uint32_t i = 0; i < count; ++i) {
        auto const name_length = reader.value<std::uint32_t>();
        AXONN_REQUIRE(name_length < 4096, "tensor file {} is corrupt (name length {})", path.string(), name_length);
        std::string name(name_length, '\0');
        reader.bytes(name.data(), name_length);
        auto const dtype = reader.value<std::uint32_t>();
        AXONN_REQUIRE(dtype <= static_cast<std::uint32_t>(DType::i32), "tensor {} in {} has unknown dtype {}", name,
                      path.string(), dtype);
        auto const ndim = reader.value<std::uint32_t>();
        AXONN_REQUIRE(ndim <= 8, "tensor {} in {} has {} dimensions (corrupt file?)", name, path.string(), ndim);
        Shape shape(ndim);
        unsigned __int128 elements = 1;  // wide enough for any product of extents that each fit the file
        for (auto& extent : shape) {
            extent = reader.value<std::int64_t>();
            AXONN_REQUIRE(extent >= 0 && static_cast<std::uint64_t>(extent) <= reader.remaining(),
                          "tensor {} in {} has a corrupt shape", name, path.string());
            elements *= static_cast<std::uint64_t>(extent);
            AXONN_REQUIRE(elements <= reader.remaining(), "tensor {} in {} is larger than the file", name,
                          path.string());
        }
        AXONN_REQUIRE(elements * dtype_size(static_cast<DType>(dtype)) <= reader.remaining(),
                      "tensor {} in {} is larger than the file", name, path.string());
        Tensor tensor(shape, static_cast<DType>(dtype));
        reader.bytes(tensor.raw_data(), tensor.bytes());
        tensors.emplace(std::move(name), std::move(tensor));
    }
    AXONN_REQUIRE(reader.remaining() == 0, "tensor file {} has trailing bytes (corrupt?)", path.string());
    return tensors;
}

}  // namespace axonn
