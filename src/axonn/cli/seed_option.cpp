#include "axonn/cli/seed_option.h"

namespace axonn {

CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& target, std::string const& description) {
    return command.add_option("--seed", target, description)
        ->check(CLI::Validator(
            [](std::string const& given) {
                return given.starts_with('-') ? "a seed is a non-negative integer, not " + given : std::string();
            },
            "SEED"))
        ->capture_default_str();
}

}  // namespace axonn
