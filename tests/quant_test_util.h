// Random GGUF block-format weights for the quantized-product and upload tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dtype.h"

namespace kvserve::testing {

inline constexpr DType kBlockFormats[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                                          DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                                          DType::kQ5_K, DType::kQ6_K};

/// `rows` rows of k weights (k a multiple of the block) as random code bytes
/// with float16 scales (and minimums) of a trained model's size: no block
/// holds inf or NaN.
std::vector<uint8_t> RandomBlocks(DType dtype, int64_t rows, int k, std::mt19937& rng);

}  // namespace kvserve::testing
