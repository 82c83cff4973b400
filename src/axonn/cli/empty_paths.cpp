#include "axonn/cli/empty_paths.h"

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

void refuse_empty(std::string_view option, std::string const& command) {
    throw UsageError(fmt::format("{} is empty: name a file or folder, or leave the option out (see `axonn {} --help`)",
                                 option, command));
}

// The subcommand of `command` named `name`, or null.
CLI::App const* subcommand_named(CLI::App const& command, std::string const& name) {
    for (CLI::App const* subcommand : command.get_subcommands([](CLI::App const*) { return true; })) {
        if (subcommand->get_name() == name) return subcommand;
    }
    return nullptr;
}

}  // namespace

void require_no_empty_paths(CLI::App const& app, std::vector<std::string> const& arguments) {
    CLI::App const* command = &app;
    std::string const name = arguments.size() > 1 ? arguments[1] : "";
    for (std::size_t i = 1; i < arguments.size(); ++i) {
        std::string const& argument = arguments[i];
        if (argument.rfind("--", 0) != 0) {
            if (argument.empty()) {
                throw UsageError(fmt::format("an argument is empty: `axonn {}` takes a file or folder there (see "
                                             "`axonn {} --help`)", name, name));
            }
            if (CLI::App const* subcommand = subcommand_named(*command, argument)) command = subcommand;
            continue;
        }
        std::size_t const equals = argument.find('=');
        std::string const option = argument.substr(0, equals);
        if (equals != std::string::npos) {
            if (equals + 1 == argument.size() && names_a_path(option)) refuse_empty(option, name);
            continue;
        }
        CLI::Option const* declared = command->get_option_no_throw(option);
        if (declared == nullptr || declared->get_expected_max() == 0) continue;
        // Its values: the arguments up to the next option.
        for (; i + 1 < arguments.size() && arguments[i + 1].rfind("--", 0) != 0; ++i) {
            if (arguments[i + 1].empty() && names_a_path(option)) refuse_empty(option, name);
            if (declared->get_expected_max() == 1) {
                ++i;
                break;
            }
        }
    }
}

}  // namespace axonn
