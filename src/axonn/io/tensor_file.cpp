#include "axonn/io/tensor_file.h"

#include "axonn/core/error.h"

#include <array>
#include <cstring>
#include <fstream>

namespace axonn {
namespace {

constexpr std::array<char, 8> tensor_file_magic = {'A', 'X', 'O', 'N', 'N', 'T', 'N', 'S'};
constexpr std::uint32_t tensor_file_version = 1;

template <typename T> void write_value(std::ofstream& out, T value) {
    out.write(reinterpret_cast<char const*>(&value), sizeof(T));
}

class Reader {
public:
    explicit Reader(std::filesystem::path const& path) : path_(path), in_(path, std::ios::binary) {
        require(in_.good(), "cannot open tensor file {}: check the path", path.string());
    }
    template <typename T> T value() {
        T result{};
        bytes(&result, sizeof(T));
        return result;
    }
    void bytes(void* destination, std::size_t count) {
        in_.read(static_cast<char*>(destination), static_cast<std::streamsize>(count));
        require(in_.gcount() == static_cast<std::streamsize>(count),
                "tensor file {} is truncated: rewrite it", path_.string());
    }
    bool at_end() { return in_.peek() == std::char_traits<char>::eof(); }

private:
    std::filesystem::path path_;
    std::ifstream in_;
};

}  // namespace

void write_tensor_file(std::filesystem::path const& path, NamedTensors const& tensors) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    require(out.good(), "cannot write tensor file {}: check that the folder exists and is writable", path.string());
    out.write(tensor_file_magic.data(), tensor_file_magic.size());
    write_value(out, tensor_file_version);
    write_value(out, static_cast<std::uint32_t>(tensors.size()));
    for (auto const& [name, tensor] : tensors) {
        write_value(out, static_cast<std::uint32_t>(name.size()));
        out.write(name.data(), static_cast<std::streamsize>(name.size()));
        write_value(out, static_cast<std::uint32_t>(tensor.dtype()));
        write_value(out, static_cast<std::uint32_t>(tensor.shape().size()));
        for (auto extent : tensor.shape()) write_value(out, static_cast<std::int64_t>(extent));
        out.write(static_cast<char const*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.bytes()));
    }
    require(out.good(), "failed writing tensor file {}: is the disk full?", path.string());
}

NamedTensors read_tensor_file(std::filesystem::path const& path) {
    Reader reader(path);
    std::array<char, 8> magic{};
    reader.bytes(magic.data(), magic.size());
    require(magic == tensor_file_magic, "{} is not an axonn tensor file (bad magic)", path.string());
    auto const version = reader.value<std::uint32_t>();
    require(version == tensor_file_version, "tensor file {} has version {}, this build reads version {}",
            path.string(), version, tensor_file_version);
    auto const count = reader.value<std::uint32_t>();
    NamedTensors tensors;
    for (std::uint32_t i = 0; i < count; ++i) {
        auto const name_length = reader.value<std::uint32_t>();
        require(name_length < 4096, "tensor file {} is corrupt (name length {})", path.string(), name_length);
        std::string name(name_length, '\0');
        reader.bytes(name.data(), name_length);
        auto const dtype = reader.value<std::uint32_t>();
        require(dtype <= static_cast<std::uint32_t>(DType::i32), "tensor {} in {} has unknown dtype {}", name,
                path.string(), dtype);
        auto const ndim = reader.value<std::uint32_t>();
        require(ndim <= 8, "tensor {} in {} has {} dimensions (corrupt file?)", name, path.string(), ndim);
        Shape shape(ndim);
        for (auto& extent : shape) {
            extent = reader.value<std::int64_t>();
            require(extent >= 0 && extent < (std::int64_t{1} << 40), "tensor {} in {} has a corrupt shape", name,
                    path.string());
        }
        Tensor tensor(shape, static_cast<DType>(dtype));
        reader.bytes(tensor.raw_data(), tensor.bytes());
        tensors.emplace(std::move(name), std::move(tensor));
    }
    require(reader.at_end(), "tensor file {} has trailing bytes (corrupt?)", path.string());
    return tensors;
}

}  // namespace axonn
