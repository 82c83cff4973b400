#include "axonn/model/architecture.h"

#include "axonn/parallel/shard_layout.h"
#include "axonn/parallel/vocab_parallel.h"

#include <utility>

namespace axonn {

std::int64_t Architecture::parameter_count() const {
    std::int64_t count = 0;
    for (ParamDecl const& param : declarations) {
        std::int64_t const rows = param.real_rows >= 0 ? param.real_rows : param.rows;
        count += param.layers * rows * param.cols;
    }
    return count;
}

double Architecture::model_flops_per_token(int seq) const {
    return 6.0 * static_cast<double>(parameter_count()) + 6.0 * layers * width * static_cast<double>(seq);
}

double Architecture::hardware_flops_per_step(int batch, int seq, bool recompute) const {
    double const C = width, hs = head_size(), s = seq, tokens = static_cast<double>(batch) * seq;
    // One token's GEMMs through one layer: q, k and v, the output projection, the MLP's; then attention's two
    // products with all s keys.
    double const layer_gemms = 2 * C * (heads + 2.0 * kv_heads) * hs + 2 * C * C + 2 * C * (mlp_rows() + mlp_width);
    double const attention = 4 * s * C;
    double const layer_passes = recompute ? 4 : 3;
    return tokens * (layer_passes * layers * (layer_gemms + attention) + 3 * 2 * C * padded_vocab);
}

Architecture Architecture::with_vocab_split(VocabSplit split, GridShape const& grid, DType precision) const {
    Architecture laid_out = *this;
    laid_out.vocab_split =
        resolved_vocab_split(split, width, padded_vocab, grid, static_cast<int>(dtype_size(precision)));
    laid_out.declarations = axonn::with_vocab_split(declarations, laid_out.vocab_split);
    // The automatic split takes Y's layout where X·Y's rows do not divide over the grid and Y's do (a grid of
    // x = 3 on a vocabulary padded to a power of two): any grid either layout fits runs.
    bool const xy_misfits = laid_out.vocab_split == VocabSplit::xy &&
                            grid_problem(laid_out.declarations, grid, grid.batch_replicas()).has_value();
    if (split == VocabSplit::automatic && xy_misfits) {
        std::vector<ParamDecl> y_layout = axonn::with_vocab_split(declarations, VocabSplit::y);
        if (!grid_problem(y_layout, grid, grid.batch_replicas())) {
            laid_out.vocab_split = VocabSplit::y;
            laid_out.declarations = std::move(y_layout);
        }
    }
    return laid_out;
}

}  // namespace axonn
