// --config FILE: a TOML file of a subcommand's options, read with toml++ and turned into arguments that come
// before the user's own, less the options the command line gives (or a later file: it wins over an earlier one) and
// those that exclude one given there. Each key is an option's long name; its
// value must have the option's type: a boolean for a flag, an integer for an integer option, a number for a
// real one, a string for a text or a path, an array for an option that takes several values; an option whose value
// may be left out takes true (given without a value), false (not given) or its value.
#include "axonn/cli/config_file.h"

#include "axonn/cli/argument_values.h"
#include "axonn/cli/subcommands.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/toml_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// The TOML type an option's value must have, by CLI11's name for the option's C++ type.
enum class ValueKind { integer, number, text };

ValueKind value_kind(CLI::Option const& option) {
    // "INT", or "INT:ROWS" where a check names the values.
    std::string const full = option.get_type_name();
    std::string const type = full.substr(0, full.find(':'));
    if (type == "INT" || type == "UINT") return ValueKind::integer;
    if (type == "FLOAT") return ValueKind::number;
    return ValueKind::text;
}

char const* kind_text(ValueKind kind) {
    switch (kind) {
        case ValueKind::integer: return "an integer";
        case ValueKind::number: return "a number";
        case ValueKind::text: return "a string";
    }
    return "a value";
}

int integer_base(toml::value<std::int64_t> const& integer) {
    switch (integer.flags()) {
        case toml::value_flags::format_as_binary: return 2;
        case toml::value_flags::format_as_octal: return 8;
        case toml::value_flags::format_as_hexadecimal: return 16;
        default: return 10;
    }
}

// One scalar as the text CLI11 parses, after checking it has the option's type.
std::string scalar_text(toml::node const& node, ValueKind kind, std::string_view name, fs::path const& file) {
    bool const fits = (kind == ValueKind::integer && node.is_integer()) ||
                      (kind == ValueKind::number && (node.is_integer() || node.is_floating_point())) ||
                      (kind == ValueKind::text && node.is_string());
    AXONN_REQUIRE(fits, "{}: '{}' must be {}, not {}", toml_location(node, file), name, kind_text(kind),
                  toml_type_name(node));
    // TOML's 0x10, 0o10 and 0b10, which the command line refuses (its numbers are decimal: 010 was octal there).
    AXONN_REQUIRE(!node.is_integer() || node.as_integer()->flags() == toml::value_flags::none,
                  "{}: '{}' is written in base {}: write it in decimal digits, as on the command line",
                  toml_location(node, file), name, integer_base(*node.as_integer()));
    if (node.is_integer()) return std::to_string(*node.value<std::int64_t>());
    // TOML's inf and nan, which no option takes (the command line refuses them as no number).
    AXONN_REQUIRE(!node.is_floating_point() || std::isfinite(*node.value<double>()),
                  "{}: '{}' is {}: give a finite decimal number", toml_location(node, file), name,
                  *node.value<double>());
    if (node.is_floating_point()) return fmt::format("{}", *node.value<double>());
    return *node.value<std::string>();
}

void append_option(std::vector<std::string>& arguments, CLI::Option const& option, std::string_view name,
                   toml::node const& node, fs::path const& file) {
    std::string const flag = "--" + std::string(name);
    // A switch, present when true; an option whose value may be left out (--resume) is one too when given a
    // boolean, and takes a string as its value.
    bool const pure_switch = option.get_expected_max() == 0;
    if (option.get_expected_min() == 0 && (pure_switch || node.is_boolean())) {
        AXONN_REQUIRE(node.is_boolean(), "{}: '{}' is a switch and must be true or false, not {}",
                      toml_location(node, file), name, toml_type_name(node));
        if (*node.value<bool>()) arguments.push_back(flag);
        return;
    }
    // An option of two values, off and on (--overlap, BOOLEAN in --help), takes a boolean as one of them.
    if (node.is_boolean() && option.get_type_name().rfind("BOOLEAN", 0) == 0) {
        arguments.push_back(flag + "=" + (*node.value<bool>() ? "on" : "off"));
        return;
    }
    ValueKind const kind = value_kind(option);
    if (option.get_expected_max() > 1) {  // several values: an array, or one value alone
        arguments.push_back(flag);
        if (toml::array const* values = node.as_array()) {
            AXONN_REQUIRE(!values->empty(), "{}: '{}' is an empty array: give it at least one value",
                          toml_location(node, file), name);
            for (toml::node const& value : *values) arguments.push_back(scalar_text(value, kind, name, file));
        } else {
            arguments.push_back(scalar_text(node, kind, name, file));
        }
        return;
    }
    bool const value_may_be_left_out = option.get_expected_min() == 0;  // it took a boolean above
    AXONN_REQUIRE(!value_may_be_left_out || kind != ValueKind::text || node.is_string(),
                  "{}: '{}' must be true, false or a string, not {}", toml_location(node, file), name,
                  toml_type_name(node));
    AXONN_REQUIRE(!node.is_string() || !node.value<std::string>()->empty() || value_may_be_empty(flag),
                  "{}: '{}' is empty: give it a value, or remove the line", toml_location(node, file), name);
    // --name=value: a value that starts with '-' stays a value.
    arguments.push_back(flag + "=" + scalar_text(node, kind, name, file));
}

using Options = std::set<CLI::Option const*>;

// Whether `option` is one of `given` or excludes one of them (`--greedy` and `--temperature`).
bool overridden(CLI::Option const* option, Options const& given) {
    auto const excludes = [](CLI::Option const* a, CLI::Option const* b) {
        std::set<CLI::Option*> const excluded = a->get_excludes();
        return std::any_of(excluded.begin(), excluded.end(), [b](CLI::Option const* each) { return each == b; });
    };
    return std::any_of(given.begin(), given.end(), [&](CLI::Option const* other) {
        return other == option || excludes(option, other) || excludes(other, option);
    });
}

// The options `arguments` name ("--steps", "--lr=0.1"; their values are not options).
Options named_options(CLI::App const& command, std::vector<std::string> const& arguments) {
    Options named;
    for (std::string const& argument : arguments) {
        if (!argument.starts_with("--")) continue;
        if (CLI::Option const* option = command.get_option_no_throw(argument.substr(0, argument.find('=')))) {
            named.insert(option);
        }
    }
    return named;
}

// `command_name`: the command's path, "memorization study", for the message that points to its --help. A key
// whose option is `given` by a source that wins over the file (the command line, a later file), or excluded by one
// given there, is left out: the file's `greedy = true` gave way to `--temperature 0.5` only as an error.
std::vector<std::string> arguments_from_file(CLI::App const& command, std::string const& command_name,
                                             fs::path const& file, Options const& given) {
    toml::table const table = read_toml_file(file, "config file", "check --config");
    std::vector<std::string> arguments;
    for (auto const& [key, node] : table) {
        std::string_view const name = key.str();
        AXONN_REQUIRE(!node.is_table(), "{}: '{}' is a section, but a config file holds `name = value` lines only",
                      toml_location(key, file), name);
        CLI::Option const* option = command.get_option_no_throw("--" + std::string(name));
        AXONN_REQUIRE(option != nullptr && name != "config" && name != "help",
                      "{}: unknown key '{}': `axonn {} --help` lists the valid names (options without their dashes)",
                      toml_location(key, file), name, command_name);
        // A value given way to is still checked for its type: the file is wrong either way.
        std::vector<std::string> overridden_value;
        append_option(overridden(option, given) ? overridden_value : arguments, *option, name, node, file);
    }
    return arguments;
}

}  // namespace

void add_config_options(CLI::App& app) {
    for (CLI::App* command : app.get_subcommands([](CLI::App const*) { return true; })) {
        if (!command->get_subcommands([](CLI::App const*) { return true; }).empty()) {
            add_config_options(*command);  // `memorization`: its subcommands take the files
            continue;
        }
        command->add_option("--config", "TOML file of options by their long names (`key = value`; unknown keys are "
                                        "an error; paths relative to the working directory, as on the command "
                                        "line); repeat --config for several, a later file's values winning")
            ->type_name("FILE")
            ->expected(1)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
}

std::vector<fs::path> config_files(CLI::App const& command) {
    CLI::Option const* option = command.get_option_no_throw("--config");
    if (option == nullptr) return {};
    std::vector<std::string> const given = option->results();
    return {given.begin(), given.end()};
}

void require_apart_from_config_files(fs::path const& output, std::string_view option, CLI::App const& command) {
    for (fs::path const& file : config_files(command)) {
        require_not_an_input(output, option, {file});
        require_input_outside(file, "--config", output, option,
                              "which this command writes into: move the config file out of it");
    }
}

std::vector<std::string> expand_config_files(CLI::App const& app, std::vector<std::string> arguments) {
    if (arguments.size() < 2) return arguments;
    // The keys of a command with subcommands (`memorization study`) are its subcommand's.
    auto const [command, name, first] = named_command(app, arguments);
    if (command == nullptr) return arguments;  // CLI11 reports the unknown subcommand

    std::vector<std::string> from_files, rest, files;
    for (std::size_t i = first; i < arguments.size(); ++i) {
        std::string const& argument = arguments[i];
        if (argument == "--config") {
            AXONN_REQUIRE(i + 1 < arguments.size(), "--config needs a file name");
            AXONN_REQUIRE(!arguments[i + 1].empty(), "--config is empty: name a TOML file, or leave the option out");
            files.push_back(arguments[++i]);
        } else if (argument.rfind("--config=", 0) == 0) {
            AXONN_REQUIRE(argument.size() > 9, "--config is empty: name a TOML file, or leave the option out");
            files.push_back(argument.substr(9));
        } else {
            rest.push_back(argument);
        }
    }
    // The command line wins over every file, and a later file over an earlier one.
    Options given = named_options(*command, rest);
    std::vector<std::vector<std::string>> per_file(files.size());
    for (std::size_t f = files.size(); f-- > 0;) {
        per_file[f] = arguments_from_file(*command, name, files[f], given);
        Options const named = named_options(*command, per_file[f]);
        given.insert(named.begin(), named.end());
    }
    for (std::vector<std::string> const& expanded : per_file) {
        from_files.insert(from_files.end(), expanded.begin(), expanded.end());
    }
    std::vector<std::string> result(arguments.begin(), arguments.begin() + static_cast<std::ptrdiff_t>(first));
    result.insert(result.end(), from_files.begin(), from_files.end());
    result.insert(result.end(), rest.begin(), rest.end());
    // The files themselves, for the command to know what it read (config_files): its outputs may not be one of
    // them. Every command takes --config (add_config_options).
    for (std::string const& file : files) result.push_back("--config=" + file);
    return result;
}

}  // namespace axonn
