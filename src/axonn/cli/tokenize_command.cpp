// `axonn tokenize`: a text file's token ids as one JSON list, or (--decode) a JSON list of ids as its text, to see
// what a tokenizer makes of a text and to check ids against another implementation's.
#include "axonn/cli/commands.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"
#include "axonn/core/standard_streams.h"
#include "axonn/io/tokenizer.h"
#include "axonn/io/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace axonn {
namespace {

constexpr std::uint64_t max_input_bytes = std::uint64_t{256} << 20;

struct TokenizeOptions {
    std::string tokenizer = "gpt2";
    std::filesystem::path gpt2_dir;
    std::filesystem::path input = "-";
    bool decode = false;
};

// Everything `stream` holds up to its end; `name` says what it is in messages ("standard input", "FIFO ids.json").
std::string read_stream(std::FILE* stream, std::string_view name, std::string_view what, std::string_view hint) {
    std::string text;
    char buffer[1 << 16];
    while (std::size_t const got = std::fread(buffer, 1, sizeof buffer, stream)) {
        text.append(buffer, got);
        AXONN_REQUIRE(text.size() <= max_input_bytes, "{} holds more than {} bytes, the most a {} may have: {}", name,
                      max_input_bytes, what, hint);
    }
    AXONN_REQUIRE(!std::ferror(stream), "cannot read the {} from {}", what, name);
    return text;
}

// Whether `path` is a pipe: a FIFO, or a shell's process substitution `<(command)` (/dev/fd/63).
bool is_pipe(std::filesystem::path const& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISFIFO(info.st_mode);
}

// The file's bytes, or a pipe's, or standard input's for "-". A pipe is read to its end as standard input is,
// waiting for its writer as `cat` would.
std::string read_input(std::filesystem::path const& path, std::string_view what, std::string_view hint) {
    if (path == "-") {
        AXONN_REQUIRE(!standard_input_closed(), "standard input is closed: name the {} as FILE, or pipe it in", what);
        return read_stream(stdin, "standard input", what, hint);
    }
    if (!is_pipe(path)) return read_input_file(path, what, hint, max_input_bytes);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> const pipe(std::fopen(path.c_str(), "rb"), &std::fclose);
    AXONN_REQUIRE(pipe != nullptr, "cannot open the FIFO {}: {}", path.string(), std::strerror(errno));
    return read_stream(pipe.get(), "FIFO " + path.string(), what, hint);
}

// A JSON list of integers that each fit a token id; the tokenizer then checks them against its vocabulary.

std::vector<std::int32_t> read_ids(std::filesystem::path const& path) {
    std::string const text = read_input(path, "token id list", "name a file holding a JSON list of token ids, "
                                        "as `axonn tokenize` prints");
    nlohmann::json ids;
    try {
        ids = parse_guarded_json(text, 1);
    } catch (Error const& error) {
        fail("{} is not a JSON list of token ids ({})", path.string(), error.what());
    }
    AXONN_REQUIRE(ids.is_array(), "{} is not a JSON list of token ids (it is a JSON {})", path.string(),
                  ids.type_name());
    std::vector<std::int32_t> result;
    result.reserve(ids.size());
    for (std::size_t index = 0; index < ids.size(); ++index) {
        nlohmann::json const& id = ids[index];
        constexpr std::int64_t lowest = std::numeric_limits<std::int32_t>::min();
        constexpr std::int64_t highest = std::numeric_limits<std::int32_t>::max();
        // A number past int64's range reads as unsigned, and as int64 it would wrap (2^64 - 1 became -1).
        bool const fits = id.is_number_unsigned() ? id.get<std::uint64_t>() <= std::uint64_t{highest}
                                                  : id.is_number_integer() && id.get<std::int64_t>() >= lowest &&
                                                        id.get<std::int64_t>() <= highest;
        AXONN_REQUIRE(fits, "{} is not a JSON list of token ids (element {} is {})", path.string(), index, id.dump());
        result.push_back(id.get<std::int32_t>());
    }
    return result;
}

void write_stdout(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void run_tokenize(TokenizeOptions const& options) {
    require_one_process("tokenize");
    as_usage_errors([&] { check_tokenizer_name(options.tokenizer); });
    auto const tokenizer =
        make_tokenizer(options.tokenizer, options.gpt2_dir.empty() ? default_gpt2_dir() : options.gpt2_dir);
    if (options.decode) {
        write_stdout(tokenizer->decode(read_ids(options.input)));
        return;
    }
    std::string text = read_input(options.input, "text file", "name the text file to tokenize");
    drop_byte_order_mark(text);
    write_stdout(fmt::format("[{}]\n", fmt::join(tokenizer->encode(text), ", ")));
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("tokenize", "Print a text file's token ids, or (--decode) the text of ids");
    command->footer("The ids are printed as one JSON list; --decode reads such a list and prints its text byte for\n"
                    "byte, so that decoding the ids of a file gives the file back, less a byte-order mark that starts\n"
                    "it (dropped, as `axonn prepare` drops it). FILE may be a pipe, as <(command). No token is\n"
                    "added: a document boundary is the tokenizer's end-of-text id, which `axonn prepare` appends.\n"
                    "Tokenizers: gpt2 (GPT-2, from scripts/fetch-tokenizer or --tokenizer-dir), llama3 (Llama 3, from\n"
                    "scripts/fetch-tokenizer or $AXONN_LLAMA3_DIR), byte (one id per byte), or a folder holding a\n"
                    "Hugging Face tokenizer.json like Llama 3's. Special tokens written in the text, such as\n"
                    "<|eot_id|>, are their ids with llama3 and plain text with gpt2, as in their reference code.\n"
                    "Examples: axonn tokenize --tokenizer llama3 notes.txt > ids.json\n"
                    "          axonn tokenize --tokenizer llama3 --decode ids.json");
    auto options = std::make_shared<TokenizeOptions>();
    command->add_option("FILE", options->input, "the text file (with --decode: the JSON list of ids); - or none: "
                        "standard input")->capture_default_str();
    command->add_option("--tokenizer", options->tokenizer, "gpt2, llama3, byte, or a folder holding a tokenizer.json")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, options->gpt2_dir, options->tokenizer);
    command->add_flag("--decode", options->decode, "FILE holds a JSON list of ids: print their text");
    command->callback([options] { run_tokenize(*options); });
}

}  // namespace axonn
