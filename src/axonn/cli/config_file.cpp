#include "axonn/cli/config_file.h"

#include "axonn/core/error.h"

#include <fmt/ranges.h>

#include <filesystem>

namespace axonn {
namespace {

std::vector<std::string> arguments_from_file(CLI::App const& command, std::string const& file) {
    require(std::filesystem::exists(file), "config file {} does not exist: check --config", file);
    std::vector<CLI::ConfigItem> items;
    try {
        items = CLI::ConfigTOML().from_file(file);
    } catch (CLI::Error const& e) {
        fail("cannot parse config file {}: {}", file, e.what());
    }
    std::vector<std::string> arguments;
    for (auto const& item : items) {
        std::string const name = item.fullname();
        CLI::Option const* option = command.get_option_no_throw("--" + name);
        require(option != nullptr && name != "config" && name != "help",
                "unknown key '{}' in config file {}: `axonn {} --help` lists the valid names", name, file,
                command.get_name());
        if (option->get_expected_min() == 0) {  // a flag: present when true
            if (item.inputs.size() == 1 && (item.inputs[0] == "true" || item.inputs[0] == "1")) {
                arguments.push_back("--" + name);
            }
            continue;
        }
        arguments.push_back("--" + name);
        arguments.insert(arguments.end(), item.inputs.begin(), item.inputs.end());
    }
    return arguments;
}

}  // namespace

std::vector<std::string> expand_config_files(CLI::App const& app, std::vector<std::string> arguments) {
    if (arguments.size() < 2) return arguments;
    CLI::App const* command = nullptr;
    for (CLI::App const* subcommand : app.get_subcommands([](CLI::App const*) { return true; })) {
        if (subcommand->get_name() == arguments[1]) command = subcommand;
    }
    if (command == nullptr) return arguments;  // CLI11 reports the unknown subcommand

    std::vector<std::string> from_files, rest;
    for (std::size_t i = 2; i < arguments.size(); ++i) {
        std::string const& argument = arguments[i];
        if (argument == "--config") {
            require(i + 1 < arguments.size(), "--config needs a file name");
            auto const expanded = arguments_from_file(*command, arguments[++i]);
            from_files.insert(from_files.end(), expanded.begin(), expanded.end());
        } else if (argument.rfind("--config=", 0) == 0) {
            auto const expanded = arguments_from_file(*command, argument.substr(9));
            from_files.insert(from_files.end(), expanded.begin(), expanded.end());
        } else {
            rest.push_back(argument);
        }
    }
    std::vector<std::string> result = {arguments[0], arguments[1]};
    result.insert(result.end(), from_files.begin(), from_files.end());
    result.insert(result.end(), rest.begin(), rest.end());
    return result;
}

}  // namespace axonn
