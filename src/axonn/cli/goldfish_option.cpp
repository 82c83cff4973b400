#include "axonn/cli/goldfish_option.h"

#include <string>

namespace axonn {

CLI::Option* add_goldfish_option(CLI::App& command, GoldfishOptions& target) {
    return command.add_option_function<std::string>(
        "--goldfish", [&target](std::string const& spec) { target = parse_goldfish(spec); },
        "the Goldfish loss: leave a pseudo-random 1/k of the training targets out of the loss, so that the model "
        "cannot reproduce a passage verbatim. k=K,h=H[,strategy=hash|static|random]: hash (the default) drops a "
        "target when a hash of it and the h-1 target ids before it falls below 1/k, so every copy of a passage loses "
        "the same tokens (h defaults to 13, the paper's); static drops positions 0, k, 2k, ... of each sequence; "
        "random draws anew every step (the last two are ablations); off: none (the default). Validation is never "
        "masked");
}

}  // namespace axonn
