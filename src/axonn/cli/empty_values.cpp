#include "axonn/cli/empty_values.h"

#include "axonn/cli/commands.h"
#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace axonn {
namespace {

// The options that name a file or folder (some take a name instead, such as --machine, but never an empty one).
constexpr std::array<std::string_view, 19> path_options = {
    "--austen-package", "--ckpt-dir",    "--config",        "--data",    "--devil-dir", "--documents", "--heldout",
    "--init-from",      "--input",       "--machine",       "--metrics", "--model-dir", "--out",       "--package",
    "--plot",           "--prompt-file", "--tokenizer-dir", "--trace",   "--val-data"};

// The options whose empty value is one of their values, documented in their --help.
constexpr std::array<std::string_view, 1> may_be_empty = {"--ablation-model"};

template <std::size_t N> bool among(std::array<std::string_view, N> const& names, std::string_view option) {
    return std::find(names.begin(), names.end(), option) != names.end();
}

// What an option's value is, for the message: "a file or folder", "a number", "a value".
std::string_view wanted(std::string_view option, CLI::Option const* declared) {
    if (among(path_options, option)) return "name a file or folder";
    if (option == "--resume") return "name latest or a checkpoint folder";
    std::string const type = declared != nullptr ? declared->get_type_name() : "";
    bool const number = type.starts_with("INT") || type.starts_with("UINT") || type.starts_with("FLOAT") ||
                        type.starts_with("NUMBER");
    return number ? "give a number" : "give it a value";
}

// `command`: the (sub)command path, "memorization eval"; a required option cannot be left out.
void refuse_empty(std::string_view option, std::string const& command, CLI::Option const* declared) {
    if (among(may_be_empty, option)) return;
    bool const required = declared != nullptr && declared->get_required();
    throw UsageError(fmt::format("{} is empty: {}{} (see `axonn {} --help`)", option, wanted(option, declared),
                                 required ? "" : ", or leave the option out", command));
}

}  // namespace

void require_no_empty_values(CLI::App const& app, std::vector<std::string> const& arguments) {
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
            if (equals + 1 == argument.size()) refuse_empty(option, name, declared);
            continue;
        }
        if (declared == nullptr || declared->get_expected_max() == 0) continue;
        // Its values: the arguments up to the next option.
        for (; i + 1 < arguments.size() && arguments[i + 1].rfind("--", 0) != 0; ++i) {
            if (arguments[i + 1].empty()) refuse_empty(option, name, declared);
            if (declared->get_expected_max() == 1) {
                ++i;
                break;
            }
        }
    }
}

}  // namespace axonn
