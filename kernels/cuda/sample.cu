// The sampling rule of SampleParams on the GPU without sorting the vocabulary.
//
// The CPU sorts candidates by (logit desc, id asc) and walks cumulative
// probabilities. Every decision of that walk is "the first element, in that
// order, at which a running sum of weights reaches a threshold": the k-th
// candidate (weight 1, threshold k), the top-p cut (weight p_i, threshold
// top_p · total, reached when ≥) and the sampled token (threshold
// uniform · kept total, reached when >). FindCut answers that question with a
// radix search over an order-preserving 32-bit key of the logit, 4 bits per
// pass (16 bucket sums per pass, each a deterministic block reduction), then
// resolves ties on the key in ascending id order (OrderedWalk). No sort, no
// global workspace, O(8 · V) reads per cut.
//
// Fidelity to the CPU: same candidate sets, same order, same expression for
// each probability (expf((x − max) / T) in float32, IEEE division), sums in
// float64 as the CPU does. Two differences remain, both far below a
// probability's float32 rounding: CUDA's expf may differ from glibc's by an
// ulp or two, and float64 sums are associated differently. A pick can only
// differ when the uniform lands within ~1e-7 (relative) of a CDF boundary.
// Results are deterministic: no atomics, fixed reduction trees.
//
// temperature <= 0 is a plain argmax with the lowest id winning ties; with
// neither top-k nor top-p the CPU walks ids in ascending order, and so does
// this (OrderedWalk over the whole row).
//
// min_p is one more membership test (the candidate's probability relative to
// the top one, the same float32 expression as the CPU's), so it narrows the
// kept set without changing its order. Before sampling, LogprobKernel takes
// the raw log-probabilities (log-sum-exp and the top N, by N ordered
// searches) and AdjustKernel applies penalties and bans in place, keeping the
// values it overwrote in saved_logits; the sample kernel then reads the
// sampled token's raw logit from there.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/sample.h"

namespace kvserve::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kDigitBits = 4;
constexpr int kBuckets = 1 << kDigitBits;
constexpr unsigned kFull = 0xffffffffu;

/// Everything the three kernels read and write, by value (pointers into the
/// SampleParams views; null where a part is off).
struct SampleKernelArgs {
  float* logits = nullptr;  // [S, V], adjusted in place
  int vocab = 0;
  const float* temperature = nullptr;  // [S]
  const int32_t* top_k = nullptr;      // [S]
  const float* top_p = nullptr;        // [S]
  const float* min_p = nullptr;        // [S] or null
  const float* uniform = nullptr;      // [S]
  int32_t* out_tokens = nullptr;       // [S]
  // LogitAdjustments (null when inactive).
  const float* repetition_penalty = nullptr;  // [S]
  const float* presence_penalty = nullptr;    // [S]
  const float* frequency_penalty = nullptr;   // [S]
  const int32_t* seen_offsets = nullptr;      // [S + 1]
  const int32_t* seen_tokens = nullptr;       // [N]
  const int32_t* seen_counts = nullptr;       // [N]
  const int32_t* banned_offsets = nullptr;    // [S + 1]
  const int32_t* banned_tokens = nullptr;     // [M]
  float* saved_logits = nullptr;              // [N + M]
  int num_seen = 0;                           // N
  // LogprobOutputs (null when inactive).
  const int32_t* top_n = nullptr;   // [S]
  float* token_logprob = nullptr;   // [S]
  int32_t* top_ids = nullptr;       // [S, K]
  float* top_logprobs = nullptr;    // [S, K]
  int k = 0;                        // K
};

struct Shared {
  double warp_buckets[kWarps][kBuckets];
  double bucket_total[kBuckets];
  double warp_double[kWarps + 1];
  float warp_float[kWarps];
  int warp_int[kWarps + 1];
  uint32_t warp_uint[kWarps + 1];
  int walk_id;
  double walk_cumulative;
};

/// Larger logit → larger key; −0 and +0 map to one key, since the CPU's
/// comparisons treat them as equal (ties broken by id).
__device__ __forceinline__ uint32_t OrderKey(float x) {
  const uint32_t bits = __float_as_uint(x == 0.f ? 0.f : x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/// A position in the (key desc, id asc) order: element (key, id) itself.
struct Cut {
  uint32_t key;
  int id;
};

/// Whether element (key, id) comes at or before `c` in the order.
__device__ __forceinline__ bool AtOrBefore(uint32_t key, int id, Cut c) {
  return key > c.key || (key == c.key && id <= c.id);
}

__device__ __forceinline__ bool Reaches(double value, double threshold, bool strict) {
  return strict ? value > threshold : value >= threshold;
}

__device__ __forceinline__ int Lane() { return threadIdx.x % 32; }
__device__ __forceinline__ int Warp() { return threadIdx.x / 32; }

__device__ double BlockSum(double v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  if (Lane() == 0) sh.warp_double[Warp()] = v;
  __syncthreads();
  if (Warp() == 0) {
    double t = Lane() < kWarps ? sh.warp_double[Lane()] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(kFull, t, o);
    if (Lane() == 0) sh.warp_double[kWarps] = t;
  }
  __syncthreads();
  const double total = sh.warp_double[kWarps];
  __syncthreads();  // read by all before the array is reused
  return total;
}

__device__ float BlockMax(float v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  if (Lane() == 0) sh.warp_float[Warp()] = v;
  __syncthreads();
  float m = sh.warp_float[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, sh.warp_float[w]);
  __syncthreads();
  return m;
}

__device__ int BlockMinInt(int v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(kFull, v, o));
  if (Lane() == 0) sh.warp_int[Warp()] = v;
  __syncthreads();
  int m = sh.warp_int[0];
  for (int w = 1; w < kWarps; ++w) m = min(m, sh.warp_int[w]);
  __syncthreads();
  return m;
}

__device__ int BlockMaxInt(int v, Shared& sh) { return -BlockMinInt(-v, sh); }

__device__ uint32_t BlockMinUint(uint32_t v, Shared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(kFull, v, o));
  if (Lane() == 0) sh.warp_uint[Warp()] = v;
  __syncthreads();
  uint32_t m = sh.warp_uint[0];
  for (int w = 1; w < kWarps; ++w) m = min(m, sh.warp_uint[w]);
  __syncthreads();
  return m;
}

/// Prefix sums of `v` over threads in thread order (deterministic). A
/// thread's exclusive sum is bitwise the previous thread's inclusive sum, so
/// consecutive ranges meet exactly.
__device__ void BlockScan(double v, double& exclusive, double& inclusive, Shared& sh) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double t = __shfl_up_sync(kFull, v, o);
    if (Lane() >= o) v += t;
  }
  double warp_exclusive = __shfl_up_sync(kFull, v, 1);
  if (Lane() == 0) warp_exclusive = 0.0;
  if (Lane() == 31) sh.warp_double[Warp()] = v;
  __syncthreads();
  double before = 0.0;
  for (int w = 0; w < Warp(); ++w) before += sh.warp_double[w];
  __syncthreads();
  exclusive = before + warp_exclusive;
  inclusive = before + v;
}

/// The argmax of x[0, n) with the lowest id winning ties (the CPU's strict >).
__device__ int BlockArgMax(const float* x, int n, Shared& sh) {
  float best = x[0];
  int best_id = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    if (x[i] > best) best = x[i], best_id = i;  // ascending i: the first max stays
  }
  const float m = BlockMax(best, sh);
  return BlockMinInt(best == m ? best_id : n, sh);
}

struct Row {
  const float* logits;  // [V]
  int vocab;
  float max_logit;
  float temperature;

  /// The CPU's std::exp((logit - max_logit) / temperature), in float32.
  __device__ __forceinline__ double Prob(int i) const {
    return static_cast<double>(expf((logits[i] - max_logit) / temperature));
  }
};

struct WalkResult {
  int id;             // -1 when no element satisfies the predicate
  double cumulative;  // start + weights through `id`
  bool reached;
};

/// Walks the elements with in_set(key, id), ids ascending, adding weight(i)
/// to `start`, and returns the first at which the sum reaches `threshold`
/// (or the last such element when none does). Each thread owns a contiguous
/// id range; a block scan of the range sums finds the range that reaches,
/// and that thread walks it.
template <typename InSet, typename Weight>
__device__ WalkResult OrderedWalk(const Row& row, InSet in_set, Weight weight, double start,
                                  double threshold, bool strict, Shared& sh) {
  const int chunk = (row.vocab + kThreads - 1) / kThreads;
  const int begin = min(row.vocab, int(threadIdx.x) * chunk), end = min(row.vocab, begin + chunk);
  double sum = 0.0;
  int last = -1;
  for (int i = begin; i < end; ++i) {
    if (in_set(OrderKey(row.logits[i]), i)) {
      sum += weight(i);
      last = i;
    }
  }
  double exclusive, inclusive;
  BlockScan(sum, exclusive, inclusive, sh);
  const double range_begin = start + exclusive, range_end = start + inclusive;
  // The first thread that owns elements and whose range ends at or past the threshold.
  const bool reaches = last >= 0 && Reaches(range_end, threshold, strict);
  const int winner = BlockMinInt(reaches ? int(threadIdx.x) : kThreads, sh);
  const int last_overall = BlockMaxInt(last, sh);
  if (winner == kThreads) {
    const double total = BlockSum(sum, sh);
    return {last_overall, start + total, false};
  }
  if (threadIdx.x == winner) {
    double c = range_begin;
    int id = last;
    for (int i = begin; i < end; ++i) {
      if (!in_set(OrderKey(row.logits[i]), i)) continue;
      c += weight(i);
      if (Reaches(c, threshold, strict)) {
        id = i;
        break;
      }
    }
    sh.walk_id = id;  // if rounding kept the walk short of it: the range's last element
    sh.walk_cumulative = c;
  }
  __syncthreads();
  const WalkResult r{sh.walk_id, sh.walk_cumulative, true};
  __syncthreads();
  return r;
}

struct CutResult {
  bool found;
  Cut cut;
  double through;  // the set's weight up to and including the cut element
};

/// The first element of `in_set`, in (key desc, id asc) order, at which the
/// running sum of `weight` reaches `threshold`.
template <typename InSet, typename Weight>
__device__ CutResult FindCut(const Row& row, InSet in_set, Weight weight, double threshold,
                             bool strict, Shared& sh) {
  uint32_t prefix = 0, mask = 0;
  double above = 0.0;  // weight of set elements whose key is above the current range
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    double acc[kBuckets];
#pragma unroll
    for (int d = 0; d < kBuckets; ++d) acc[d] = 0.0;
    for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
      const uint32_t key = OrderKey(row.logits[i]);
      if ((key & mask) != prefix || !in_set(key, i)) continue;
      const double w = weight(i);
      const uint32_t digit = (key >> shift) & (kBuckets - 1);
#pragma unroll
      for (int d = 0; d < kBuckets; ++d) acc[d] += digit == uint32_t(d) ? w : 0.0;
    }
    // 16 block sums at once: per warp, then warps in order.
#pragma unroll
    for (int d = 0; d < kBuckets; ++d) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc[d] += __shfl_xor_sync(kFull, acc[d], o);
    }
    if (Lane() == 0) {
#pragma unroll
      for (int d = 0; d < kBuckets; ++d) sh.warp_buckets[Warp()][d] = acc[d];
    }
    __syncthreads();
    if (threadIdx.x < kBuckets) {
      double t = 0.0;
      for (int w = 0; w < kWarps; ++w) t += sh.warp_buckets[w][threadIdx.x];
      sh.bucket_total[threadIdx.x] = t;
    }
    __syncthreads();
    // Every thread takes the same walk over the same totals: a uniform choice.
    int chosen = -1;
    for (int d = kBuckets - 1; d >= 0; --d) {
      if (Reaches(above + sh.bucket_total[d], threshold, strict)) {
        chosen = d;
        break;
      }
      above += sh.bucket_total[d];
    }
    __syncthreads();  // totals read before the next pass rewrites them
    if (chosen < 0) return {false, Cut{0, -1}, above};
    prefix |= uint32_t(chosen) << shift;
    mask |= uint32_t(kBuckets - 1) << shift;
  }
  const uint32_t key = prefix;
  const WalkResult ties = OrderedWalk(
      row, [&](uint32_t k, int id) { return k == key && in_set(k, id); }, weight, above, threshold,
      strict, sh);
  return {ties.id >= 0, Cut{key, ties.id}, ties.cumulative};
}

/// The last element of `in_set` in (key desc, id asc) order: its smallest
/// key, and the largest id with that key.
template <typename InSet>
__device__ int LastInOrder(const Row& row, InSet in_set, Shared& sh) {
  uint32_t local_min = 0xffffffffu;
  for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
    const uint32_t key = OrderKey(row.logits[i]);
    if (in_set(key, i)) local_min = min(local_min, key);
  }
  const uint32_t min_key = BlockMinUint(local_min, sh);
  int local_id = -1;
  for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
    const uint32_t key = OrderKey(row.logits[i]);
    if (key == min_key && in_set(key, i)) local_id = max(local_id, i);
  }
  return BlockMaxInt(local_id, sh);
}

/// The sampled token's raw log-probability: its logit from before the
/// adjustments (saved by AdjustKernel, else still in the row) minus the
/// log-sum-exp LogprobKernel left in token_logprob[r].
__device__ void WriteTokenLogprob(const SampleKernelArgs& a, int r, const float* x, int token,
                                  Shared& sh) {
  if (a.top_n == nullptr || a.top_n[r] < 0) return;
  int found = 0x7fffffff;  // the token's first entry, which holds its raw value
  if (a.seen_offsets != nullptr) {
    const int seen_begin = a.seen_offsets[r], seen_end = a.seen_offsets[r + 1];
    const int ban_begin = a.banned_offsets[r], ban_end = a.banned_offsets[r + 1];
    int local = 0x7fffffff;
    for (int e = seen_begin + int(threadIdx.x); e < seen_end; e += kThreads) {
      if (a.seen_tokens[e] == token) local = min(local, e);
    }
    for (int e = ban_begin + int(threadIdx.x); e < ban_end; e += kThreads) {
      if (a.banned_tokens[e] == token) local = min(local, a.num_seen + e);
    }
    found = BlockMinInt(local, sh);
  }
  if (threadIdx.x == 0) {
    const float raw = found != 0x7fffffff ? a.saved_logits[found] : x[token];
    a.token_logprob[r] = raw - a.token_logprob[r];
  }
}

__global__ void __launch_bounds__(kThreads) SampleKernel(const __grid_constant__ SampleKernelArgs a) {
  __shared__ Shared sh;
  const int r = blockIdx.x;
  const int vocab = a.vocab;
  const float* x = a.logits + int64_t(r) * vocab;
  int32_t* out_tokens = a.out_tokens;
  const float temp = a.temperature[r];
  if (temp <= 0.f) {
    const int id = BlockArgMax(x, vocab, sh);
    if (threadIdx.x == 0) out_tokens[r] = id;
    WriteTokenLogprob(a, r, x, id, sh);
    return;
  }
  const int k = a.top_k[r];
  const float p = a.top_p[r], u = a.uniform[r];
  const float min_p = a.min_p != nullptr ? a.min_p[r] : 0.f;
  const bool use_top_k = k > 0 && k < vocab;
  const bool use_top_p = p < 1.f;
  const bool use_min_p = min_p > 0.f;

  float local_max = x[0];
  for (int i = threadIdx.x; i < vocab; i += kThreads) local_max = fmaxf(local_max, x[i]);
  const Row row{x, vocab, BlockMax(local_max, sh), temp};
  auto mass = [&](int i) { return row.Prob(i); };
  auto all = [](uint32_t, int) { return true; };
  // Relative to the top token's probability, which is expf(0) = 1.
  auto above_min_p = [&](int i) { return !use_min_p || expf((x[i] - row.max_logit) / temp) >= min_p; };

  if (!use_top_k && !use_top_p) {  // the CPU walks ids in ascending order
    auto kept = [&](uint32_t, int i) { return above_min_p(i); };
    double local = 0.0;
    for (int i = threadIdx.x; i < vocab; i += kThreads) local += kept(0, i) ? mass(i) : 0.0;
    const double total = BlockSum(local, sh);
    const WalkResult w = OrderedWalk(row, kept, mass, 0.0, double(u) * total, /*strict=*/true, sh);
    if (threadIdx.x == 0) out_tokens[r] = w.id;  // not reached: the last kept id, as the CPU
    WriteTokenLogprob(a, r, x, w.id, sh);
    return;
  }

  Cut k_cut{0, -1};
  if (use_top_k) {
    k_cut = FindCut(row, all, [](int) { return 1.0; }, double(k), /*strict=*/false, sh).cut;
  }
  auto candidates = [&](uint32_t key, int id) { return !use_top_k || AtOrBefore(key, id, k_cut); };
  double local = 0.0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    if (candidates(OrderKey(x[i]), i)) local += mass(i);
  }
  const double total = BlockSum(local, sh);

  bool kept_is_prefix = use_top_k;  // else every id is kept
  Cut kept = k_cut;
  double kept_total = total;
  if (use_top_p) {
    const CutResult c = FindCut(row, candidates, mass, double(p) * total, /*strict=*/false, sh);
    if (c.found) {  // not found: rounding left the mass short of top_p · total; keep all
      kept_is_prefix = true;
      kept = c.cut;
      kept_total = c.through;
    }
  }
  auto kept_set = [&](uint32_t key, int id) {
    return (!kept_is_prefix || AtOrBefore(key, id, kept)) && above_min_p(id);
  };
  if (use_min_p) {
    double kept_local = 0.0;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      if (kept_set(OrderKey(x[i]), i)) kept_local += mass(i);
    }
    kept_total = BlockSum(kept_local, sh);
  }
  const CutResult pick = FindCut(row, kept_set, mass, double(u) * kept_total, /*strict=*/true, sh);
  int token = pick.cut.id;
  if (!pick.found || token < 0) {
    // uniform · total rounded up to the total: the CPU takes the last kept candidate.
    token = LastInOrder(row, kept_set, sh);
  }
  if (threadIdx.x == 0) out_tokens[r] = token;
  WriteTokenLogprob(a, r, x, token, sh);
}

/// Per row with top_n >= 0: log-sum-exp of the raw logits (left in
/// token_logprob[r] for the sample kernel) and the top_n largest, ordered
/// by (logit desc, id asc): each is the first element after the previous one.
__global__ void __launch_bounds__(kThreads) LogprobKernel(const __grid_constant__ SampleKernelArgs a) {
  __shared__ Shared sh;
  const int r = blockIdx.x;
  const int n = a.top_n[r];
  if (n < 0) return;
  const float* x = a.logits + int64_t(r) * a.vocab;
  float local_max = x[0];
  for (int i = threadIdx.x; i < a.vocab; i += kThreads) local_max = fmaxf(local_max, x[i]);
  const float row_max = BlockMax(local_max, sh);
  double local = 0.0;
  for (int i = threadIdx.x; i < a.vocab; i += kThreads) local += exp(double(x[i]) - row_max);
  const double lse = double(row_max) + log(BlockSum(local, sh));
  if (threadIdx.x == 0) a.token_logprob[r] = static_cast<float>(lse);
  Cut previous{0xffffffffu, -1};  // before every element
  bool first = true;
  for (int j = 0; j < n && j < a.vocab; ++j) {
    // The largest key among the elements after `previous` (as the smallest ~key).
    uint32_t smallest_inverted = 0xffffffffu;
    for (int i = threadIdx.x; i < a.vocab; i += kThreads) {
      const uint32_t key = OrderKey(x[i]);
      if (first || !AtOrBefore(key, i, previous)) smallest_inverted = min(smallest_inverted, ~key);
    }
    const uint32_t key = ~BlockMinUint(smallest_inverted, sh);
    int local_id = 0x7fffffff;
    for (int i = threadIdx.x; i < a.vocab; i += kThreads) {
      if (OrderKey(x[i]) == key && (first || !AtOrBefore(key, i, previous))) local_id = min(local_id, i);
    }
    const int id = BlockMinInt(local_id, sh);
    if (threadIdx.x == 0) {
      a.top_ids[int64_t(r) * a.k + j] = id;
      a.top_logprobs[int64_t(r) * a.k + j] = static_cast<float>(double(x[id]) - lse);
    }
    previous = Cut{key, id};
    first = false;
  }
}

/// Row r's penalties, then its bans, in place; the values they replace go to
/// saved_logits (seen entries at e, banned at num_seen + e).
__global__ void AdjustKernel(const __grid_constant__ SampleKernelArgs a) {
  const int r = blockIdx.x;
  float* x = a.logits + int64_t(r) * a.vocab;
  const float rep = a.repetition_penalty[r], pres = a.presence_penalty[r],
              freq = a.frequency_penalty[r];
  for (int e = a.seen_offsets[r] + int(threadIdx.x); e < a.seen_offsets[r + 1]; e += blockDim.x) {
    const int id = a.seen_tokens[e];
    if (id < 0 || id >= a.vocab) continue;  // the host builds these from validated ids
    float v = x[id];
    a.saved_logits[e] = v;
    // Rounded intrinsics: no FMA contraction, so the CPU's values bit for bit.
    if (rep != 1.f) v = v > 0.f ? __fdiv_rn(v, rep) : __fmul_rn(v, rep);
    const int c = a.seen_counts[e];
    if (c > 0) v = __fsub_rn(v, __fadd_rn(__fmul_rn(freq, static_cast<float>(c)), pres));
    x[id] = v;
  }
  __syncthreads();  // a banned id may be a seen one too: the ban comes last
  for (int e = a.banned_offsets[r] + int(threadIdx.x); e < a.banned_offsets[r + 1]; e += blockDim.x) {
    const int id = a.banned_tokens[e];
    if (id < 0 || id >= a.vocab) continue;
    a.saved_logits[a.num_seen + e] = x[id];
    x[id] = -INFINITY;
  }
}

}  // namespace

absl::Status LaunchSample(const SampleParams& p, cudaStream_t stream) {
  if (p.num_rows == 0) return absl::OkStatus();
  const int vocab = static_cast<int>(p.logits.dim(1));
  if (vocab <= 0) return absl::InvalidArgumentError("Sample: empty vocabulary");
  SampleKernelArgs a;
  a.logits = p.logits.as<float>();
  a.vocab = vocab;
  a.temperature = p.temperature.as<const float>();
  a.top_k = p.top_k.as<const int32_t>();
  a.top_p = p.top_p.as<const float>();
  a.min_p = p.min_p.empty() ? nullptr : p.min_p.as<const float>();
  a.uniform = p.uniform.as<const float>();
  a.out_tokens = p.out_tokens.as<int32_t>();
  if (p.adjust.active()) {
    const LogitAdjustments& j = p.adjust;
    a.repetition_penalty = j.repetition_penalty.as<const float>();
    a.presence_penalty = j.presence_penalty.as<const float>();
    a.frequency_penalty = j.frequency_penalty.as<const float>();
    a.seen_offsets = j.seen_offsets.as<const int32_t>();
    a.seen_tokens = j.seen_tokens.as<const int32_t>();
    a.seen_counts = j.seen_counts.as<const int32_t>();
    a.banned_offsets = j.banned_offsets.as<const int32_t>();
    a.banned_tokens = j.banned_tokens.as<const int32_t>();
    a.saved_logits = j.saved_logits.as<float>();
    a.num_seen = static_cast<int>(j.seen_tokens.dim(0));
  }
  if (p.logprobs.active()) {
    a.top_n = p.logprobs.top_n.as<const int32_t>();
    a.token_logprob = p.logprobs.token_logprob.as<float>();
    a.top_ids = p.logprobs.top_ids.as<int32_t>();
    a.top_logprobs = p.logprobs.top_logprobs.as<float>();
    a.k = static_cast<int>(p.logprobs.top_ids.dim(1));
    LogprobKernel<<<p.num_rows, kThreads, 0, stream>>>(a);
    RETURN_IF_LAUNCH_ERROR();
  }
  if (p.adjust.active()) {
    AdjustKernel<<<p.num_rows, 256, 0, stream>>>(a);
    RETURN_IF_LAUNCH_ERROR();
  }
  SampleKernel<<<p.num_rows, kThreads, 0, stream>>>(a);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace kvserve::cuda
