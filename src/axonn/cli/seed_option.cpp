#include "axonn/cli/seed_option.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace axonn {

CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& target, std::string const& description) {
    return command.add_option("--seed", target, description)
        ->check(CLI::Validator(
            [](std::string const& given) {
                if (given.starts_with('-')) return "a seed is a non-negative integer, not " + given;
                // The conversion itself would saturate: every larger number the same seed, without a word.
                std::uint64_t value = 0;
                auto const parsed = std::from_chars(given.data(), given.data() + given.size(), value);
                if (parsed.ec == std::errc::result_out_of_range) {
                    return fmt::format("a seed is at most {}, not {}", std::numeric_limits<std::uint64_t>::max(),
                                       given);
                }
                return std::string();
            },
            "SEED"))
        ->capture_default_str();
}

}  // namespace axonn
