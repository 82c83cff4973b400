// Fuzzes axonn::parse_grid_file (src/axonn/train/grid_file.cpp), the reader of the grid files that `axonn tune`
// writes and `--grid FILE` reads.
//
// Input: the text of a grid file.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report, another exception
// escaping, or an accepted file that does not survive a round trip through write_grid_file and read_grid_file.
#include "axonn/core/error.h"
#include "axonn/train/grid_file.h"
#include "fuzz_files.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string const text(reinterpret_cast<char const*>(data), size);
    axonn::GridFile file;
    try {
        file = axonn::parse_grid_file(text, "grid.json");
    } catch (axonn::Error const&) {
        return 0;  // a refused file: the expected outcome for most inputs
    }
    std::filesystem::path const path = fuzz::work_folder("grid-file") / "written.json";
    std::filesystem::remove(path);
    try {
        axonn::write_grid_file(path, file, axonn::ExistingDestination::keep);
        axonn::GridFile const again = axonn::read_grid_file(path);
        // The candidates are kept as given, not read: a number JSON cannot hold (1e400) comes back as null.
        bool const same = again.grid == file.grid && again.grid_order == file.grid_order && again.job == file.job &&
                          again.machine == file.machine;
        if (!same) {
            std::fprintf(stderr, "fuzz_grid_file: the file written back reads differently\n");
            std::abort();
        }
    } catch (axonn::Error const& e) {
        std::fprintf(stderr, "fuzz_grid_file: the file written back is refused: %s\n", e.what());
        std::abort();
    }
    return 0;
}
