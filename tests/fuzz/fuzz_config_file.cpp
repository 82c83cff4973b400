// Fuzzes axonn::expand_config_files (src/axonn/cli/config_file.cpp), which reads a `--config FILE` of TOML
// (src/axonn/core/toml_file.cpp, toml++) into command-line arguments, and CLI11's parse of what it gives, on a
// command with an option of each kind the real commands have: an integer, a number, a text, a switch, a switch
// whose value may be given (like --resume), and a list.
//
// Input: the bytes of a config file.
//
// A failure is anything but a clean result, an axonn::Error or CLI11's refusal (a value out of its option's range):
// a crash, a sanitizer report, or another exception escaping.
#include "axonn/cli/config_file.h"
#include "axonn/core/error.h"
#include "fuzz_files.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::filesystem::path const path = fuzz::work_folder("config-file") / "run.toml";
    fuzz::write_file(path, data, size);
    CLI::App app("fuzz");
    CLI::App* train = app.add_subcommand("train");
    int steps = 0;
    double lr = 0;
    std::string name, resume;
    bool overlap = false;
    std::vector<int> sizes;
    train->add_option("--steps", steps);
    train->add_option("--lr", lr);
    train->add_option("--name", name);
    train->add_flag("--overlap", overlap);
    train->add_option("--resume", resume)->expected(0, 1)->default_str("latest");
    train->add_option("--sizes", sizes);
    train->add_option("--config", name);  // read by expand_config_files, as in the real commands
    try {
        std::vector<std::string> const arguments =
            axonn::expand_config_files(app, {"axonn", "train", "--config", path.string()});
        std::vector<std::string> reversed(arguments.rbegin(), arguments.rend() - 1);
        app.parse(reversed);
    } catch (axonn::Error const&) {
        // A one-line refusal naming the file, line and column.
    } catch (CLI::ParseError const&) {
        // CLI11's refusal of a value its option cannot hold: a usage error in the real command.
    }
    return 0;
}
