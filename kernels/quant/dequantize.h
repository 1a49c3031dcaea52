// ggml's weight block formats → float32, one function per format, written
// from ggml's reference dequantize_row_* (ggml-quants.c). Compiled with
// -ffp-contract=off so that the products and sums round exactly as gguf-py's
// NumPy reference does (tests/gguf_dequant_test.py compares every format bit
// for bit). The GGUF loader, the CPU embedding lookup and the uploads to a
// GPU all dequantize through here.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace kvserve {

/// Dequantizes `blocks` blocks of the block format `dtype` (kQ8_0 ... kQ6_K)
/// from `src` into blocks · DTypeBlockElems(dtype) floats at `dst`. Any other
/// dtype writes nothing (callers check IsBlockDType).
void DequantizeBlocks(DType dtype, const void* src, int64_t blocks, float* dst);

}  // namespace kvserve
