#include "axonn/cli/grid_order_option.h"

#include "axonn/comm/grid.h"
#include "axonn/core/error.h"

namespace axonn {

CLI::Option* add_grid_order_option(CLI::App& command, std::string& target, std::string const& description) {
    return command.add_option("--grid-order", target, description)
        ->check(CLI::Validator(
            [](std::string const& given) {
                try {
                    parse_axis_order(given);
                    return std::string();
                } catch (Error const& error) {
                    return std::string(error.what());
                }
            },
            "ORDER"))
        ->capture_default_str();
}

}  // namespace axonn
