// TOML files (run configurations, machine profiles), parsed by toml++: a syntax error, a duplicate key or a file
// that is not a regular file is an axonn::Error that says where, as FILE:LINE:COLUMN.
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace axonn {

// Reads and parses `path`; `what` names the file in messages ("config file", "machine profile").
toml::table read_toml_file(std::filesystem::path const& path, std::string_view what, std::string_view hint);

// "FILE:LINE:COLUMN" of a value, or of a key, of a parsed file, for messages about it.
std::string toml_location(toml::node const& node, std::filesystem::path const& path);
std::string toml_location(toml::key const& key, std::filesystem::path const& path);

// "an integer", "a string", "a table", ... for messages that say what a value is instead of what it should be.
std::string toml_type_name(toml::node const& node);

// `text` as a TOML basic string, quoted and escaped, so that any text reads back as itself.
std::string toml_quoted(std::string_view text);

}  // namespace axonn
