#include "axonn/cli/argument_values.h"

#include "axonn/cli/subcommands.h"
#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <initializer_list>
#include <string_view>

namespace axonn {
namespace {

// The options that name a file or folder (some take a name instead, such as --machine, but never an empty one).
constexpr std::array<std::string_view, 19> path_options = {
    "--austen-package", "--ckpt-dir",    "--config",        "--data",    "--devil-dir", "--documents", "--heldout",
    "--init-from",      "--input",       "--machine",       "--metrics", "--model-dir", "--out",       "--package",
    "--plot",           "--prompt-file", "--tokenizer-dir", "--trace",   "--val-data"};

// The options whose empty value is one of their values, documented in their --help.
constexpr std::array<std::string_view, 2> may_be_empty = {"--ablation-model", "--prompt"};

template <std::size_t N> bool among(std::array<std::string_view, N> const& names, std::string_view option) {
    return std::find(names.begin(), names.end(), option) != names.end();
}

// Whether the option's type, as CLI11 names it in --help, is one of `kinds`.
bool of_type(CLI::Option const* declared, std::initializer_list<std::string_view> kinds) {
    if (declared == nullptr) return false;
    std::string const type = declared->get_type_name();
    return std::any_of(kinds.begin(), kinds.end(), [&](std::string_view kind) { return type.starts_with(kind); });
}

bool takes_whole_numbers(CLI::Option const* declared) { return of_type(declared, {"INT", "UINT"}); }

bool takes_real_numbers(CLI::Option const* declared) { return of_type(declared, {"FLOAT"}); }

// What an option's value is, for the message: "a file or folder", "a number", "a value".
std::string_view wanted(std::string_view option, CLI::Option const* declared) {
    if (among(path_options, option)) return "name a file or folder";
    if (option == "--resume") return "name latest or a checkpoint folder";
    return of_type(declared, {"INT", "UINT", "FLOAT", "NUMBER"}) ? "give a number" : "give it a value";
}

// `command`: the (sub)command path, "memorization eval"; a required option cannot be left out.
[[noreturn]] void refuse_empty(std::string_view option, std::string const& command, CLI::Option const* declared) {
    bool const required = declared != nullptr && declared->get_required();
    throw UsageError(fmt::format("{} is empty: {}{} (see `axonn {} --help`)", option, wanted(option, declared),
                                 required ? "" : ", or leave the option out", command));
}

// An empty positional argument: after a switch, which takes no value; where a subcommand is named; or where the
// command takes a path (every command's positional arguments are paths).
[[noreturn]] void refuse_empty_argument(CLI::App const& command, std::string const& name, std::string const& before) {
    CLI::Option const* previous = before.starts_with("--") ? command.get_option_no_throw(before) : nullptr;
    if (previous != nullptr && previous->get_expected_max() == 0) {
        throw UsageError(fmt::format("an empty argument follows {}, which takes no value: drop it (see `axonn {} "
                                     "--help`)", before, name));
    }
    bool const names_a_subcommand = !command.get_subcommands([](CLI::App const*) { return true; }).empty();
    throw UsageError(fmt::format("an argument is empty: `axonn {}` takes {} there (see `axonn {} --help`)", name,
                                 names_a_subcommand ? "a subcommand" : "a file or folder", name));
}

bool all_digits(std::string_view text) { return text.find_first_not_of("0123456789") == std::string_view::npos; }

// An optional sign, then decimal digits without a leading zero.
bool is_decimal_whole_number(std::string_view text) {
    if (text.starts_with('+') || text.starts_with('-')) text.remove_prefix(1);
    return !text.empty() && all_digits(text) && (text.size() == 1 || text.front() != '0');
}

// A sign at most, decimal digits with at most one point among them, then at most an exponent: 0.5, .5, 6e-4, 1E+3.
// Not hexadecimal (CLI11 took `0x1p-4` as 0.0625), not inf or nan, no space.
bool is_decimal_real_number(std::string_view text) {
    if (text.starts_with('+') || text.starts_with('-')) text.remove_prefix(1);
    std::size_t const exponent_at = text.find_first_of("eE");
    if (exponent_at != std::string_view::npos) {
        std::string_view exponent = text.substr(exponent_at + 1);
        if (exponent.starts_with('+') || exponent.starts_with('-')) exponent.remove_prefix(1);
        if (exponent.empty() || !all_digits(exponent)) return false;
    }
    std::string_view const mantissa = text.substr(0, exponent_at);
    std::size_t const point = mantissa.find('.');
    std::string_view const whole = mantissa.substr(0, point);
    std::string_view const fraction = point == std::string_view::npos ? std::string_view() : mantissa.substr(point + 1);
    return !(whole.empty() && fraction.empty()) && all_digits(whole) && all_digits(fraction);
}

// A decimal number a float holds, as the options keep most real numbers: 1e999 and 1e39 became infinite, 1e-400
// and 1e-50 zero ("--lr must be positive, got 0").
void require_float_range(std::string_view option, std::string_view number, std::string const& command) {
    errno = 0;
    double const magnitude = std::fabs(std::strtod(std::string(number).c_str(), nullptr));
    bool const underflow = errno == ERANGE && magnitude == 0;  // not a zero written: a value too small for a double
    bool const large = magnitude > std::numeric_limits<float>::max();
    if (!large && !underflow && (magnitude == 0 || magnitude >= std::numeric_limits<float>::min())) return;
    throw UsageError(fmt::format("{} {} is too {} a number (of magnitude {}): give a {} one (see `axonn {} --help`)",
                                 option, number, large ? "large" : "small",
                                 large ? "at most about 3.4e38" : "at least about 1.2e-38, or 0",
                                 large ? "smaller" : "larger", command));
}

// One value given to `option`: not empty, nor any item of a list (CLI11 dropped `--models a,,b`'s empty one without
// a word), and in decimal where the option takes whole numbers.
void check_value(std::string_view option, std::string_view value, std::string const& command,
                 CLI::Option const* declared) {
    if (value.empty()) {
        if (value_may_be_empty(option)) return;
        refuse_empty(option, command, declared);
    }
    if (declared == nullptr) return;
    char const delimiter = declared->get_delimiter();
    for (std::size_t begin = 0; begin <= value.size();) {
        std::size_t const end = delimiter == '\0' ? value.size() : std::min(value.find(delimiter, begin), value.size());
        std::string_view const number = value.substr(begin, end - begin);
        if (number.empty()) {
            throw UsageError(fmt::format("{} {}: an item of the list is empty: separate the items with one '{}' each "
                                         "(see `axonn {} --help`)",
                                         option, value, delimiter, command));
        }
        if (takes_whole_numbers(declared) && !is_decimal_whole_number(number)) {
            throw UsageError(fmt::format("{} {}: write a whole number in decimal digits, without a leading zero, "
                                         "such as 8 (see `axonn {} --help`)",
                                         option, value, command));
        }
        if (takes_real_numbers(declared) && !is_decimal_real_number(number)) {
            throw UsageError(fmt::format("{} {} is not a number in decimal: write one such as 0.5 or 6e-4 (see "
                                         "`axonn {} --help`)",
                                         option, value, command));
        }
        if (takes_real_numbers(declared)) require_float_range(option, number, command);
        begin = end + 1;
    }
}

}  // namespace

bool value_may_be_empty(std::string_view option) { return among(may_be_empty, option); }

std::vector<std::string> empty_values_apart(std::vector<std::string> arguments) {
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        std::string& argument = arguments[i];
        if (argument.starts_with("--") && argument.size() > 3 && argument.back() == '=' &&
            argument.find('=') == argument.size() - 1) {
            argument.pop_back();
            arguments.insert(arguments.begin() + static_cast<std::ptrdiff_t>(++i), std::string());
        }
    }
    return arguments;
}

void require_checked_values(CLI::App const& app, std::vector<std::string> const& arguments) {
    CLI::App const* command = &app;
    std::string name;  // the subcommands named so far: "memorization eval"
    for (std::size_t i = 1; i < arguments.size(); ++i) {
        std::string const& argument = arguments[i];
        if (argument.rfind("--", 0) != 0) {
            if (argument.empty()) refuse_empty_argument(*command, name, arguments[i - 1]);
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
            check_value(option, std::string_view(argument).substr(equals + 1), name, declared);
            continue;
        }
        if (declared == nullptr || declared->get_expected_max() == 0) continue;
        // Its values: the arguments up to the next option.
        for (; i + 1 < arguments.size() && arguments[i + 1].rfind("--", 0) != 0; ++i) {
            check_value(option, arguments[i + 1], name, declared);
            if (declared->get_expected_max() == 1) {
                ++i;
                break;
            }
        }
    }
}

}  // namespace axonn
