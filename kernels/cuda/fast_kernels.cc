#include "kernels/cuda/fast_kernels.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvserve::cuda {
namespace {

std::vector<std::pair<const char*, bool FastKernels::*>> Names() {
  return {{"flash_decode", &FastKernels::flash_decode},
          {"prefill_mma", &FastKernels::prefill_mma},
          {"rope_kv_write", &FastKernels::rope_kv_write},
          {"rmsnorm", &FastKernels::rmsnorm},
          {"gemv_small_m", &FastKernels::gemv_small_m},
          {"gemv_silu_mul", &FastKernels::gemv_silu_mul},
          {"gemm_skinny_mma", &FastKernels::gemm_skinny_mma},
          {"gemv_rmsnorm", &FastKernels::gemv_rmsnorm},
          {"pdl", &FastKernels::pdl}};
}

}  // namespace

FastKernels FastKernels::None() {
  FastKernels k;
  for (const auto& [name, field] : Names()) k.*field = false;
  return k;
}

absl::StatusOr<FastKernels> FastKernels::Parse(absl::string_view spec) {
  spec = absl::StripAsciiWhitespace(spec);
  if (spec == "all" || spec == "true") return All();
  if (spec == "none" || spec == "false" || spec.empty()) return None();
  FastKernels k = None();
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    part = absl::StripAsciiWhitespace(part);
    bool found = false;
    for (const auto& [name, field] : Names()) {
      if (part == name) {
        k.*field = true;
        found = true;
      }
    }
    if (!found) {
      std::vector<const char*> names;
      for (const auto& [name, field] : Names()) names.push_back(name);
      return absl::InvalidArgumentError(
          absl::StrCat("--cuda_fast_kernels: unknown kernel \"", part, "\" (all, none, or a list of ",
                       absl::StrJoin(names, ", "), ")"));
    }
  }
  return k;
}

std::string FastKernels::ToString() const {
  std::vector<const char*> on;
  for (const auto& [name, field] : Names()) {
    if (this->*field) on.push_back(name);
  }
  return on.empty() ? "none" : absl::StrJoin(on, ",");
}

}  // namespace kvserve::cuda
