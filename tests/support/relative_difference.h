// ‖a − b‖ / ‖b‖ over two equally long vectors (float or double), in double: how the tests compare a result with its
// reference (b) norm-wise. 0 when both are 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace axonn::testing {

template <typename T> double relative_difference(std::vector<T> const& a, std::vector<T> const& b) {
    double difference = 0, reference = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        difference += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        reference += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(difference / std::max(reference, 1e-300));
}

}  // namespace axonn::testing
