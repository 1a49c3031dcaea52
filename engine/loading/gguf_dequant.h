// A GGUF tensor of any supported ggml type → float32: the element types as
// kernels/dtype.h converts them, the block formats by kernels/quant/
// dequantize.h (ggml's reference dequantize_row_*, bit-exact with gguf-py's
// NumPy: tests/gguf_dequant_test.py), big tensors split over threads.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace kvserve {

/// Dequantizes `numel` elements of ggml type `type` from `src` into `dst`.
/// `numel` must be a multiple of the type's block size and `src` must hold
/// numel / block_size blocks (GgufFile checks both for every tensor).
/// InvalidArgument for a type kvserve does not dequantize, naming it.
absl::Status DequantizeGgml(uint32_t type, const uint8_t* src, int64_t numel, float* dst);

}  // namespace kvserve
