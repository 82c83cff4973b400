#include "axonn/cli/subcommands.h"

namespace axonn {

CLI::App const* subcommand_named(CLI::App const& command, std::string const& name) {
    for (CLI::App const* subcommand : command.get_subcommands([](CLI::App const*) { return true; })) {
        if (subcommand->get_name() == name) return subcommand;
    }
    return nullptr;
}

NamedCommand named_command(CLI::App const& app, std::vector<std::string> const& arguments) {
    if (arguments.size() < 2) return {nullptr, "", arguments.size()};
    CLI::App const* const command = subcommand_named(app, arguments[1]);
    if (command == nullptr) return {nullptr, arguments[1], 2};
    if (arguments.size() > 2) {
        if (CLI::App const* const subcommand = subcommand_named(*command, arguments[2])) {
            return {subcommand, arguments[1] + " " + arguments[2], 3};
        }
    }
    return {command, arguments[1], 2};
}

}  // namespace axonn
