// The small models that tests run in either family, named for parameterised suites.
#pragma once

#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/model/architecture.h"

#include <ostream>
#include <string>

namespace axonn::testing {

struct ArchitectureCase {
    std::string name;
    Architecture (*architecture)();
    friend void PrintTo(ArchitectureCase const& c, std::ostream* out) { *out << c.name; }
};

// gpt2-tiny with a vocabulary of 100 ids.
inline Architecture tiny_gpt2() {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    return decoder_architecture(config);
}

inline Architecture tiny_llama() { return decoder_architecture(llama_preset("llama-tiny")); }

}  // namespace axonn::testing
