#include "axonn/parallel/param_decl.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

namespace axonn {

std::string vocab_split_name(VocabSplit split) { return split == VocabSplit::xy ? "xy" : "y"; }

VocabSplit parse_vocab_split(std::string const& name) {
    if (name == "xy") return VocabSplit::xy;
    if (name == "y") return VocabSplit::y;
    throw UsageError(fmt::format("unknown vocabulary split '{}': use xy (rows over the X·Y plane) or y (rows over Y, "
                                 "columns over X)",
                                 name));
}

std::vector<ParamDecl> with_vocab_split(std::vector<ParamDecl> params, VocabSplit split) {
    for (ParamDecl& param : params) {
        if (param.role == ShardRole::vocabulary_block || param.role == ShardRole::vocabulary_rows) {
            param.role = split == VocabSplit::xy ? ShardRole::vocabulary_rows : ShardRole::vocabulary_block;
        }
    }
    return params;
}

}  // namespace axonn
