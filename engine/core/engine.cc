#include "engine/core/engine.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "engine/core/request_validation.h"
#include "engine/core/runner_state_check.h"
#include "engine/model/model_registry.h"
#include "base/ceil_div.h"

namespace kvserve {

// Engine-thread state of one request, beside its Sequence in the scheduler.
struct ActiveRequest {
  SeqId id = 0;
  Request request;
  std::shared_ptr<RequestSink> sink;
  uint32_t max_new_tokens = 0;
  uint64_t seed = 0;    // the runner draws from std::mt19937_64(seed): same seed, same tokens
  absl::Time arrival;
  bool admitted_once = false;
  uint32_t num_generated = 0;
  std::vector<int32_t> banned;   // EOS and stop ids, masked before min_new_tokens
  Sequence* seq = nullptr;       // owned by the scheduler until Release
  /// Since when its client has not been reading (sink->IsPaused()); unset while not paused.
  std::optional<absl::Time> paused_since;
};

namespace {

// Device memory the KV pool leaves free for what is allocated after it: the
// step metadata, the decode split workspace, allocator rounding.
constexpr size_t kGpuHeadroomBytes = size_t(256) << 20;

// A cancel this close to the deadline is taken to be the deadline's.
constexpr absl::Duration kDeadlineCancelSlack = absl::Milliseconds(100);

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

Engine::Engine(const EngineConfig& config, ModelSource model, std::unique_ptr<Backend> backend,
               StatsObserver* stats)
    : config_(config), source_(std::move(model)), backend_(std::move(backend)), stats_(stats) {}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config,
                                                       ModelSource model,
                                                       std::unique_ptr<Backend> backend,
                                                       StatsObserver* stats) {
  RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<Engine> engine(new Engine(config, std::move(model), std::move(backend), stats));
  RETURN_IF_ERROR(engine->Initialize());
  engine->output_ = std::make_unique<OutputProcessor>(
      engine->source_.tokenizer.get(), stats, [e = engine.get()](SeqId id) { e->RequestStop(id); },
      // A request counts as live until its client has seen the end, so the
      // output backlog counts against the queue limit too.
      [e = engine.get()] { e->live_requests_.fetch_sub(1); });
  engine->thread_ = std::thread([e = engine.get()] { e->Loop(); });
  return engine;
}

absl::Status Engine::Initialize() {
  const ModelConfig& mc = source_.config;
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(model_, CreateModel(mc, *source_.weights, *backend_,
                                              config_.max_num_batched_tokens, config_.max_num_seqs));
  source_.weights.reset();  // weights are on the device now; unmap the checkpoint

  const size_t block_bytes = KvCache::BytesPerBlock(mc.kv_cache_shape(), config_.block_size, backend_->compute_dtype());
  const int blocks_per_full_seq = CeilDiv(mc.max_context, config_.block_size);
  int num_blocks = config_.num_kv_blocks;
  if (num_blocks == 0) {
    // As many as the budget allows, but no more than every running sequence
    // at full context could use.
    ASSIGN_OR_RETURN(const size_t budget, KvCacheBudget(block_bytes));
    const int64_t by_budget = static_cast<int64_t>(budget / block_bytes);
    const int64_t useful = int64_t(config_.max_num_seqs) * blocks_per_full_seq;
    num_blocks = static_cast<int>(std::max<int64_t>(1, std::min(by_budget, useful)));
  }
  ASSIGN_OR_RETURN(kv_cache_, KvCache::Create(*backend_, mc.kv_cache_shape(), num_blocks, config_.block_size));
  blocks_ = std::make_unique<BlockManager>(num_blocks, config_.block_size,
                                           config_.enable_prefix_caching);
  SchedulerConfig sc;
  sc.max_num_seqs = config_.max_num_seqs;
  sc.max_num_batched_tokens = config_.max_num_batched_tokens;
  sc.admission_reserve_blocks = static_cast<int>(num_blocks * config_.admission_reserve_fraction);
  scheduler_ = std::make_unique<Scheduler>(sc, *blocks_);
  ASSIGN_OR_RETURN(runner_, ModelRunner::Create(*backend_, *model_, *kv_cache_,
                                                config_.max_num_batched_tokens, config_.max_num_seqs));

  info_.model_name = source_.name;
  info_.architecture = mc.architecture.empty() ? "LlamaForCausalLM" : mc.architecture;
  info_.vocab_size = mc.vocab_size;
  info_.max_context = mc.max_context;
  info_.eos_token_ids = mc.eos_token_ids;
  info_.bos_token_id = mc.bos_token_id;
  info_.kv_block_size = config_.block_size;
  info_.kv_num_blocks = num_blocks;
  info_.has_tokenizer = source_.tokenizer != nullptr;
  info_.device = backend_->name();
  info_.dtype = std::string(DTypeName(backend_->compute_dtype()));
  info_.default_max_new_tokens = config_.default_max_new_tokens;
  info_.weight_bytes = model_->weight_bytes();
  info_.kernel_fallbacks = backend_->KernelFallbacks();
  info_.sampling_defaults = mc.sampling_defaults;

  KV_LOG(INFO) << "model " << info_.model_name << ": " << mc.num_layers << " layers, hidden "
               << mc.hidden_size << ", heads " << mc.num_heads << "/" << mc.num_kv_heads << " x "
               << mc.head_dim << ", vocab " << mc.vocab_size << ", context " << mc.max_context
               << "; weights " << model_->weight_bytes() / (1 << 20)
               << " MiB as stored, computing in " << info_.dtype << " on " << info_.device
               << ", loaded in "
               << absl::ToDoubleSeconds(absl::Now() - start) << " s";
  KV_LOG(INFO) << "KV cache: " << num_blocks << " blocks of " << config_.block_size
               << " tokens = " << int64_t(num_blocks) * config_.block_size << " tokens, "
               << kv_cache_->bytes() / (1 << 20) << " MiB; prefix caching "
               << (config_.enable_prefix_caching ? "on" : "off") << "; workspace "
               << model_->workspace_bytes() / (1 << 20) << " MiB";
  if (!mc.sampling_defaults.empty()) {
    KV_LOG(INFO) << "sampling defaults of the HTTP API from " << mc.sampling_defaults.source << ": "
                 << mc.sampling_defaults.ToString();
  }
  return absl::OkStatus();
}

// On the CPU, the configured budget. On a device that reports its memory,
// what --gpu_memory_utilization of it leaves once everything allocated so
// far (weights, workspace, the runtime's own context, other processes) is
// counted: the weights are on the device already when this runs.
absl::StatusOr<size_t> Engine::KvCacheBudget(size_t block_bytes) {
  absl::StatusOr<DeviceMemoryInfo> memory = backend_->MemoryInfo();
  if (absl::IsUnimplemented(memory.status())) return config_.kv_cache_bytes;
  if (!memory.ok()) return memory.status();
  constexpr int64_t kMiB = 1 << 20;
  const int64_t total = static_cast<int64_t>(memory->total_bytes);
  const int64_t used = total - static_cast<int64_t>(memory->free_bytes);
  const int64_t allowed = static_cast<int64_t>(config_.gpu_memory_utilization * static_cast<double>(total));
  const int64_t budget = allowed - used - static_cast<int64_t>(kGpuHeadroomBytes);
  const int64_t weights = static_cast<int64_t>(model_->weight_bytes());
  const int64_t workspace = static_cast<int64_t>(model_->workspace_bytes());
  KV_LOG(INFO) << backend_->name() << " memory: " << total / kMiB << " MiB total, "
               << config_.gpu_memory_utilization << " of it = " << allowed / kMiB << " MiB; in use "
               << used / kMiB << " MiB (weights " << weights / kMiB << ", workspace "
               << workspace / kMiB << ", runtime and other processes "
               << (used - weights - workspace) / kMiB << "); headroom "
               << kGpuHeadroomBytes / kMiB << " MiB; KV cache budget "
               << std::max<int64_t>(budget, 0) / kMiB << " MiB";
  if (budget < static_cast<int64_t>(block_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "--gpu_memory_utilization ", config_.gpu_memory_utilization, " allows ", allowed / kMiB,
        " MiB of the device's ", total / kMiB, " MiB, but ", used / kMiB,
        " MiB are in use already (weights ", weights / kMiB, " MiB, workspace ", workspace / kMiB,
        " MiB) and ", kGpuHeadroomBytes / kMiB,
        " MiB are kept free: no room for one KV block; raise it or set --num_kv_blocks"));
  }
  return static_cast<size_t>(budget);
}

Engine::~Engine() { Stop(); }

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (output_) output_->Stop();
}

void Engine::AbortAll(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    abort_all_ = std::move(status);
    wake_ = true;
  }
  cv_.notify_all();
}

void Engine::RequestStop(SeqId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requests_.push_back(id);
  }
  cv_.notify_all();
}

void Engine::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

absl::Status Engine::Submit(Request request, std::shared_ptr<RequestSink> sink) {
  RETURN_IF_ERROR(ValidateRequest(request, info_));
  auto req = std::make_unique<ActiveRequest>();
  req->max_new_tokens = EffectiveMaxNewTokens(request, info_);
  const uint64_t seed = request.sampling.seed.value_or(
      (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() ^
      (config_.seed + unseeded_counter_.fetch_add(1)));
  req->seed = seed;
  const SamplingOptions& sampling = request.sampling;
  if (sampling.min_new_tokens > 0) {
    if (!request.stopping.ignore_eos) req->banned = info_.eos_token_ids;
    const auto& stop_ids = request.stopping.stop_token_ids;
    req->banned.insert(req->banned.end(), stop_ids.begin(), stop_ids.end());
  }
  req->arrival = absl::Now();
  req->request = std::move(request);
  req->sink = std::move(sink);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (!abort_all_.ok()) return abort_all_;
    const int limit = config_.max_num_seqs + config_.max_queued_requests;
    if (live_requests_.load() >= limit) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "server busy: ", limit, " requests in flight (--max_num_seqs + --max_queued_requests)"));
    }
    live_requests_.fetch_add(1);
    submitted_.push_back(std::move(req));
  }
  cv_.notify_all();
  return absl::OkStatus();
}

void Engine::Loop() {
  for (;;) {
    std::vector<std::unique_ptr<ActiveRequest>> submitted;
    std::vector<SeqId> stops;
    absl::Status abort_all;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] {
        return stopping_ || wake_ || !submitted_.empty() || !stop_requests_.empty() ||
               scheduler_->HasRunnableWork();
      };
      // Only paused requests (or none): sleep until a sink resumes one
      // (Wake), or until the next stall limit or deadline is due.
      if (!ready()) {
        if (const absl::Time until = NextTimedCheck(); until == absl::InfiniteFuture()) {
          cv_.wait(lock, ready);
        } else {
          cv_.wait_until(lock, absl::ToChronoTime(until), ready);
        }
      }
      if (stopping_) break;
      wake_ = false;
      submitted.swap(submitted_);
      stops.swap(stop_requests_);
      abort_all = abort_all_;
    }
    AdmitSubmitted(std::move(submitted));
    ApplyStops(stops);
    if (!abort_all.ok()) {
      while (!active_.empty()) Abort(*active_.begin()->second, abort_all);
    }
    UpdatePauses();
    AbortCancelledAndExpired();
    if (scheduler_->HasRunnableWork()) Step();
    FlushIteration();
  }
  // Shutdown: nothing may be left without an end.
  std::vector<std::unique_ptr<ActiveRequest>> submitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    submitted.swap(submitted_);
  }
  AdmitSubmitted(std::move(submitted));
  while (!active_.empty()) Abort(*active_.begin()->second, absl::UnavailableError("the server is shutting down"));
  FlushIteration();
}

void Engine::AdmitSubmitted(std::vector<std::unique_ptr<ActiveRequest>> submitted) {
  for (auto& req : submitted) {
    req->id = next_seq_id_++;
    auto seq = std::make_unique<Sequence>(req->id, req->request.prompt);
    seq->sampling.options = req->request.sampling;
    seq->sampling.seed = req->seed;
    seq->sampling.banned_tokens = req->banned;
    seq->sampling.capture_logits = req->request.capture_logits;
    if (req->request.constraint != nullptr) {
      seq->sampling.constraint = req->request.constraint;
      seq->sampling.end_tokens = info_.eos_token_ids;
      const auto& stop_ids = req->request.stopping.stop_token_ids;
      seq->sampling.end_tokens.insert(seq->sampling.end_tokens.end(), stop_ids.begin(),
                                      stop_ids.end());
    }
    req->seq = seq.get();
    scheduler_->Add(std::move(seq));
    RequestAdded added;
    added.id = req->id;
    added.sink = req->sink;
    added.stop = std::move(req->request.stopping.stop);  // matched on the output thread only
    added.prompt_tokens = static_cast<uint32_t>(req->request.prompt.size());
    added.capture_logits = req->request.capture_logits;
    added.arrival = req->arrival;
    iteration_.events.emplace_back(std::move(added));
    active_.emplace(req->id, std::move(req));
  }
}

void Engine::ApplyStops(const std::vector<SeqId>& stops) {
  for (SeqId id : stops) {
    if (!active_.contains(id)) continue;  // it ended on its own meanwhile
    Release(id);
    iteration_.events.emplace_back(StopApplied{id});
  }
}

void Engine::UpdatePauses() {
  if (config_.max_unsent_tokens == 0) return;  // the sinks never pause
  const absl::Time now = absl::Now();
  num_paused_ = 0;
  for (auto& [id, req] : active_) {
    const bool paused = req->sink->IsPaused();
    req->seq->paused = paused;
    if (!paused) {
      req->paused_since.reset();
      continue;
    }
    ++num_paused_;
    if (!req->paused_since) {
      req->paused_since = now;
      ++iteration_.stats.num_pauses;
    }
  }
}

absl::Time Engine::NextTimedCheck() const {
  if (num_paused_ == 0) return absl::InfiniteFuture();  // idle: only a Wake brings work
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [id, req] : active_) {
    next = std::min(next, req->request.deadline);
    if (req->paused_since && config_.max_stall_s > 0) {
      next = std::min(next, *req->paused_since + absl::Seconds(config_.max_stall_s));
    }
  }
  return next;
}

void Engine::AbortCancelledAndExpired() {
  const absl::Time now = absl::Now();
  std::vector<std::pair<ActiveRequest*, absl::Status>> doomed;
  const absl::Duration max_stall = absl::Seconds(config_.max_stall_s);
  for (auto& [id, req] : active_) {
    // The deadline first: gRPC also cancels a call whose deadline passed, and
    // the client's own timer may cancel it a moment before the server's
    // clock reaches the deadline (gRPC does not say why a call was cancelled).
    const bool cancelled = req->sink->IsCancelled();
    if (now >= req->request.deadline ||
        (cancelled && req->request.deadline - now < kDeadlineCancelSlack)) {
      doomed.emplace_back(req.get(), absl::DeadlineExceededError(absl::StrCat(
                                         "deadline exceeded after ",
                                         absl::ToInt64Milliseconds(now - req->arrival), " ms")));
    } else if (cancelled) {
      doomed.emplace_back(req.get(), absl::CancelledError("request cancelled by the client"));
    } else if (req->paused_since && config_.max_stall_s > 0 &&
               now - *req->paused_since >= max_stall) {
      ++iteration_.stats.num_stall_cancels;
      doomed.emplace_back(req.get(), absl::ResourceExhaustedError(absl::StrCat(
          "stream stalled: the client did not read its output, paused at ",
          config_.max_unsent_tokens, " unsent tokens (--max_unsent_tokens) for ",
          config_.max_stall_s, " s (--max_stall_s)")));
    }
  }
  for (auto& [req, status] : doomed) Abort(*req, status);
}

void Engine::Step() {
  ScheduleOutput schedule = scheduler_->Schedule();
  if (schedule.empty()) {
    // Cannot happen while the pool fits every validated request; do not spin.
    KV_LOG(ERROR) << "scheduler produced an empty step with " << scheduler_->num_waiting()
                  << " waiting and " << scheduler_->num_running() << " running";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return;
  }
  IterationStats& stats = iteration_.stats;
  stats.num_preemptions += static_cast<int>(schedule.preempted.size());
  stats.prefix_cache_queried_tokens += schedule.prefix_cache_queried_tokens;
  stats.prefix_cache_hit_tokens += schedule.prefix_cache_hit_tokens;
  NoteBlockUsage();  // blocks were just allocated: record the high-water mark
  const absl::Time now = absl::Now();
  for (SeqId id : schedule.admitted) {
    ActiveRequest& req = *active_.at(id);
    if (req.admitted_once) continue;  // re-admitted after preemption
    req.admitted_once = true;
    stats.queue_times_s.push_back(absl::ToDoubleSeconds(now - req.arrival));
    stats.num_prompt_tokens += static_cast<int64_t>(req.request.prompt.size());
  }
  absl::StatusOr<StepResult> result = runner_->Run(schedule);
  if (result.ok() && config_.verify_runner_state) {
    // Before the new tokens are appended: the runner has seen every token the scheduler has.
    if (absl::Status s = VerifyRunnerState(*scheduler_, runner_->state()); !s.ok()) result = s;
  }
  if (!result.ok()) {
    KV_LOG(ERROR) << "model step failed: " << result.status();
    for (const ScheduledChunk& chunk : schedule.chunks) {
      if (auto it = active_.find(chunk.seq_id); it != active_.end()) {
        Abort(*it->second, absl::InternalError(absl::StrCat("model step failed: ",
                                                            result.status().message())));
      }
    }
    return;
  }
  stats.ran_model_step = true;
  stats.num_step_tokens = result->num_tokens;
  for (size_t i = 0; i < result->seq_ids.size(); ++i) {
    const SeqId id = result->seq_ids[i];
    scheduler_->AppendToken(id, result->tokens[i]);
    std::vector<float> logits;
    if (!result->logits.empty()) logits = std::move(result->logits[i]);
    ActiveRequest& req = *active_.at(id);
    ProcessToken(req, result->tokens[i], std::move(logits),
                 result->logprobs.empty() ? nullptr : &result->logprobs[i]);
  }
}

// The finish this token decides on its own; stop strings are the output
// stage's (it asks for a stop through RequestStop).
void Engine::ProcessToken(ActiveRequest& req, int32_t token, std::vector<float> logits,
                          TokenLogprobs* logprobs) {
  ++req.num_generated;
  const StoppingOptions& stopping = req.request.stopping;
  FinishReason reason = FinishReason::kNone;
  if (!stopping.ignore_eos && Contains(info_.eos_token_ids, token)) {
    reason = FinishReason::kEos;
  } else if (Contains(stopping.stop_token_ids, token)) {
    reason = FinishReason::kStop;
  } else if (req.num_generated >= req.max_new_tokens) {
    reason = FinishReason::kLength;
  }
  const SeqId id = req.id;
  TokenSampled sampled{id, token, reason, std::move(logits)};
  if (logprobs != nullptr && req.request.sampling.logprobs) sampled.logprobs = std::move(*logprobs);
  iteration_.events.emplace_back(std::move(sampled));
  // Free the blocks before the client can see the end.
  if (reason != FinishReason::kNone) Release(id);
}

void Engine::Abort(ActiveRequest& req, absl::Status status) {
  const SeqId id = req.id;
  Release(id);
  iteration_.events.emplace_back(RequestAborted{id, std::move(status)});
}

void Engine::Release(SeqId id) {
  if (auto it = active_.find(id); it != active_.end() && it->second->paused_since) --num_paused_;
  scheduler_->Remove(id);
  active_.erase(id);
  NoteBlockUsage();
}

void Engine::NoteBlockUsage() {
  const int used = blocks_->num_used_blocks();
  used_blocks_.store(used);
  iteration_.stats.kv_blocks_used_peak = std::max(iteration_.stats.kv_blocks_used_peak, used);
}

void Engine::FlushIteration() {
  NoteBlockUsage();
  IterationStats& stats = iteration_.stats;
  stats.time = absl::Now();
  stats.kv_blocks_total = blocks_->num_blocks();
  stats.kv_blocks_used = blocks_->num_used_blocks();
  stats.num_running = scheduler_->num_running();
  stats.num_waiting = scheduler_->num_waiting();
  stats.num_paused = num_paused_;
  output_->Push(std::exchange(iteration_, {}));
}

}  // namespace kvserve
