#include "kernels/cuda/device_error.h"

#include "absl/strings/str_cat.h"

namespace kvserve::cuda {

absl::Status DeviceErrorStatus(const DeviceError& e) {
  switch (static_cast<DeviceErrorCode>(e.code)) {
    case DeviceErrorCode::kNone:
      return absl::OkStatus();
    case DeviceErrorCode::kTokenId:
      return absl::OutOfRangeError(
          absl::StrCat("Embedding: token id ", e.a, " not in [0, ", e.b, ")"));
    case DeviceErrorCode::kGatherRow:
      return absl::OutOfRangeError(absl::StrCat("GatherRows: row ", e.a, " not in [0, ", e.b, ")"));
    case DeviceErrorCode::kRopePosition:
      return absl::OutOfRangeError(
          absl::StrCat("RopeSplitQkv: position ", e.a, " not in [0, ", e.b, ")"));
    case DeviceErrorCode::kKvSlot:
      return absl::OutOfRangeError(absl::StrCat("KV cache slot ", e.a, " not in [0, ", e.b, ")"));
    case DeviceErrorCode::kBlockId:
      return absl::OutOfRangeError(absl::StrCat("block id ", e.a, " not in [0, ", e.b, ")"));
    case DeviceErrorCode::kBlockTable:
      return absl::OutOfRangeError(absl::StrCat("context of ", e.a, " tokens needs ",
                                                (e.a + e.c - 1) / (e.c > 0 ? e.c : 1),
                                                " blocks; the block table holds ", e.b));
    case DeviceErrorCode::kPrefillQueries:
      return absl::OutOfRangeError(absl::StrCat("PrefillAttention: sequence ", e.a, " has ", e.b,
                                                " queries for a context of ", e.c));
    case DeviceErrorCode::kLaunchBound:
      if (e.op == 0) {
        return absl::OutOfRangeError(absl::StrCat("PrefillAttention: sequence ", e.a, " has ", e.b,
                                                  " queries, more than max_q_len = ", e.c));
      }
      return absl::OutOfRangeError(absl::StrCat("DecodeAttention: sequence ", e.a, " has a context of ",
                                                e.b, " tokens, more than max_context_len = ", e.c));
  }
  return absl::InternalError(absl::StrCat("CUDA kernel reported unknown error code ", e.code));
}

}  // namespace kvserve::cuda
