// What the fuzz targets that parse files share: a temporary folder of this process (under /dev/shm when it
// exists, else $TMPDIR or /tmp; removed at exit) and writing one input into a file there.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace fuzz {

// The first of /dev/shm, $TMPDIR and /tmp where a folder "axonn-fuzz-NAME-XXXXXX" can be made.
inline std::filesystem::path make_work_folder(std::string const& name) {
    char const* tmpdir = std::getenv("TMPDIR");
    for (std::string base : {std::string("/dev/shm"), std::string(tmpdir != nullptr ? tmpdir : ""),
                             std::string("/tmp")}) {
        if (base.empty()) continue;
        std::string pattern = base + "/axonn-fuzz-" + name + "-XXXXXX";
        if (::mkdtemp(pattern.data()) != nullptr) return pattern;
    }
    std::perror("fuzz: mkdtemp in /dev/shm, $TMPDIR and /tmp");
    std::abort();
}

// Made on first use (one per process: a fuzz target is one process) and removed at exit. Never destroyed: the
// exit handler still needs it.
inline std::filesystem::path const& work_folder(std::string const& name) {
    static std::filesystem::path const* const folder = [&name] {
        auto* made = new std::filesystem::path(make_work_folder(name));
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(work_folder(""), ignored);
        });
        return made;
    }();
    return *folder;
}

inline void write_file(std::filesystem::path const& path, std::uint8_t const* data, std::size_t size) {
    // O_TRUNC on one path, so every input gets a fresh size and modification time.
    int const fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (std::size_t done = 0; ok && done < size;) {
        ssize_t const n = ::write(fd, data + done, size - done);
        ok = n > 0;
        if (ok) done += static_cast<std::size_t>(n);
    }
    if (fd >= 0 && ::close(fd) != 0) ok = false;
    if (!ok) {
        std::perror("fuzz: writing the input file");
        std::abort();
    }
}

}  // namespace fuzz
