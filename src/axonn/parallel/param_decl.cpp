#include "axonn/parallel/param_decl.h"

#include "axonn/core/error.h"

namespace axonn {

std::string vocab_split_name(VocabSplit split) {
    switch (split) {
        case VocabSplit::xy: return "xy";
        case VocabSplit::y: return "y";
        case VocabSplit::automatic: return "auto";
    }
    return "?";
}

std::vector<ParamDecl> with_vocab_split(std::vector<ParamDecl> params, VocabSplit split) {
    AXONN_INVARIANT(split != VocabSplit::automatic, "the automatic vocabulary split must be resolved for a grid first");
    for (ParamDecl& param : params) {
        if (param.role == ShardRole::vocabulary_block || param.role == ShardRole::vocabulary_rows) {
            param.role = split == VocabSplit::xy ? ShardRole::vocabulary_rows : ShardRole::vocabulary_block;
        }
    }
    return params;
}

}  // namespace axonn
