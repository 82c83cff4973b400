#include "axonn/cli/sampling_options.h"

namespace axonn {

void add_sampling_options(CLI::App& command, SampleOptions& target) {
    command.add_option("--temperature", target.temperature, "sampling temperature (0: always the most likely token)")
        ->capture_default_str();
    command.add_option("--top-k", target.top_k, "sample among the k most likely tokens (0: all)")
        ->capture_default_str();
    command.add_option("--top-p", target.top_p, "then among the fewest most likely tokens whose probabilities reach "
                       "p (nucleus sampling; 1: all)")->capture_default_str();
}

}  // namespace axonn
