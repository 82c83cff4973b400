#include "axonn/cli/goldfish_option.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <string>

namespace axonn {
namespace {

// h is the hash strategy's window alone: given with another strategy it changed nothing, and the banner, which shows
// the setting as it acts, left it out without a word. (A checkpoint's recorded setting from an earlier build, which
// wrote h for every strategy, is parsed without this check.)
GoldfishOptions parse_given_goldfish(std::string const& spec) {
    GoldfishOptions const options = parse_goldfish(spec);
    bool const names_h = ("," + spec).find(",h=") != std::string::npos;
    if (names_h && options.strategy != GoldfishStrategy::hash) {
        throw UsageError(fmt::format("--goldfish {}: h is the hash strategy's window and changes nothing with "
                                     "strategy={}: leave h out",
                                     spec, options.strategy == GoldfishStrategy::random ? "random" : "static"));
    }
    return options;
}

}  // namespace

CLI::Option* add_goldfish_option(CLI::App& command, GoldfishOptions& target) {
    return command.add_option_function<std::string>(
        "--goldfish", [&target](std::string const& spec) { target = parse_given_goldfish(spec); },
        "the Goldfish loss: leave a pseudo-random 1/k of the training targets out of the loss, so that the model "
        "cannot reproduce a passage verbatim. k=K,h=H[,strategy=hash|static|random]: hash (the default) drops a "
        "target when a hash of it and the h-1 target ids before it falls below 1/k, so every copy of a passage loses "
        "the same tokens (h defaults to 13, the paper's; only hash reads it); static drops positions 0, k, 2k, ... "
        "of each sequence; random draws anew every step (the last two are ablations); off: none (the default). "
        "Validation is never masked");
}

}  // namespace axonn
