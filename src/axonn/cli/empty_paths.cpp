#include "axonn/cli/empty_paths.h"

#include "axonn/cli/commands.h"
#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace axonn {
namespace {

// The options that name a file or folder (some take a name instead, such as --machine, but never an empty one).
constexpr std::array<std::string_view, 18> path_options = {
    "--austen-package", "--ckpt-dir", "--config", "--data",    "--devil-dir",   "--documents",
    "--init-from",      "--input",    "--machine", "--metrics", "--model-dir",   "--out",
    "--package",        "--plot",     "--prompt-file", "--tokenizer-dir", "--trace", "--val-data"};

bool names_a_path(std::string_view option) {
    return std::find(path_options.begin(), path_options.end(), option) != path_options.end();
}

// `command`: the (sub)command path, "memorization eval"; a required option cannot be left out.
void refuse_empty(std::string_view option, std::string const& command, CLI::Option const* declared) {
    bool const required = declared != nullptr && declared->get_required();
    throw UsageError(fmt::format("{} is empty: name a file or folder{} (see `axonn {} --help`)", option,
                                 required ? "" : ", or leave the option out", command));
}

}  // namespace

void require_no_empty_paths(CLI::App const& app, std::vector<std::string> const& arguments) {
    CLI::App const* command = &app;
    std::string name;  // the subcommands named so far: "memorization eval"
    for (std::size_t i = 1; i < arguments.size(); ++i) {
        std::string const& argument = arguments[i];
        if (argument.rfind("--", 0) != 0) {
            if (argument.empty()) {
                throw UsageError(fmt::format("an argument is empty: `axonn {}` takes a file or folder there (see "
                                             "`axonn {} --help`)", name, name));
            }
            if (CLI::App const* subcommand = subcommand_named(*command, argument)) {
                command = subcommand;
                name += (name.empty() ? "" : " ") + argument;
            }
            continue;
        }
        std::size_t const equals = argument.find('=');
        std::string const option = argument.substr(0, equals);
        CLI::Option const* declared = command->get_option_no_throw(option);
        if (equals != std::string::npos) {
            if (equals + 1 == argument.size() && names_a_path(option)) refuse_empty(option, name, declared);
            continue;
        }
        if (declared == nullptr || declared->get_expected_max() == 0) continue;
        // Its values: the arguments up to the next option.
        for (; i + 1 < arguments.size() && arguments[i + 1].rfind("--", 0) != 0; ++i) {
            if (arguments[i + 1].empty() && names_a_path(option)) refuse_empty(option, name, declared);
            if (declared->get_expected_max() == 1) {
                ++i;
                break;
            }
        }
    }
}

}  // namespace axonn
