#include "tests/quant_test_util.h"

#include <cstring>

namespace kvserve::testing {
namespace {

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = FloatToHalf(v);
  std::memcpy(p, &h, 2);
}

}  // namespace

std::vector<uint8_t> RandomBlocks(DType dtype, int64_t rows, int k, std::mt19937& rng) {
  const int64_t blocks = rows * (k / DTypeBlockElems(dtype));
  const size_t size = DTypeSize(dtype);
  std::vector<uint8_t> out(blocks * size);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* blk = out.data() + b * size;
    switch (dtype) {
      case DType::kQ4_1:
      case DType::kQ5_1: PutHalf(blk + 2, -scale(rng) * 8); [[fallthrough]];
      case DType::kQ8_0:
      case DType::kQ4_0:
      case DType::kQ5_0: PutHalf(blk, scale(rng)); break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        PutHalf(blk, scale(rng) / 8);
        PutHalf(blk + 2, scale(rng) / 8);
        break;
      case DType::kQ6_K: PutHalf(blk + 208, scale(rng) / 16); break;
      case DType::kQ3_K: PutHalf(blk + 108, scale(rng) / 8); break;
      case DType::kQ2_K:
        PutHalf(blk + 80, scale(rng) / 4);
        PutHalf(blk + 82, scale(rng) / 4);
        break;
      default: break;
    }
  }
  return out;
}

}  // namespace kvserve::testing
