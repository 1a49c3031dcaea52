// ggml block formats → float32, one function per type, written from ggml's
// reference dequantize_row_* (ggml-quants.c). Compiled with -ffp-contract=off
// so that the products and sums round exactly as gguf-py's numpy reference
// does (tests/gguf_dequant_test.py compares every supported type bit for bit).
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
