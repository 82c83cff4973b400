#include "axonn/cli/subcommands.h"

namespace axonn {

CLI::App const* subcommand_named(CLI::App const& command, std::string const& name) {
    for (CLI::App const* subcommand : command.get_subcommands([](CLI::App const*) { return true; })) {
        if (subcommand->get_name() == name) return subcommand;
    }
    return nullptr;
}

}  // namespace axonn
