#include "server/request_mapping.h"

#include <atomic>

#include "absl/strings/str_cat.h"

namespace kvserve {
namespace {

// Text beyond this is refused before tokenizing (gRPC's 4 MiB message limit
// applies first; this keeps one request from monopolizing the tokenizer).
constexpr size_t kMaxTextBytes = 1 << 20;

// A client's request id is echoed back and shows up in metrics and logs; a
// bound keeps a huge one from being amplified (issue 13 item 2).
constexpr size_t kMaxRequestIdBytes = 256;

std::string NewRequestId() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat("req-", counter.fetch_add(1) + 1);
}

absl::StatusOr<grammar::ConstraintSpec> ToConstraintSpec(const v1::SamplingParams& s) {
  using Kind = grammar::ConstraintSpec::Kind;
  grammar::ConstraintSpec spec;
  switch (s.constraint_case()) {
    case v1::SamplingParams::kJsonSchema:
      spec = {Kind::kJsonSchema, s.json_schema()};
      break;
    case v1::SamplingParams::kRegex:
      spec = {Kind::kRegex, s.regex()};
      break;
    case v1::SamplingParams::kGrammar:
      spec = {Kind::kGrammar, s.grammar()};
      break;
    case v1::SamplingParams::kChoice:
      spec.kind = Kind::kChoice;
      spec.choices.assign(s.choice().choices().begin(), s.choice().choices().end());
      break;
    case v1::SamplingParams::kJsonObject:
      if (!s.json_object()) {
        return absl::InvalidArgumentError(
            "sampling.json_object must be true when set (leave it unset for no constraint)");
      }
      spec.kind = Kind::kJsonObject;
      break;
    case v1::SamplingParams::CONSTRAINT_NOT_SET:
      break;
  }
  return spec;
}

}  // namespace

absl::StatusOr<Request> ToEngineRequest(const v1::GenerateRequest& proto, const Engine& engine,
                                        absl::Time deadline) {
  if (proto.request_id().size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("request_id of ", proto.request_id().size(),
                                                   " bytes exceeds the limit of ",
                                                   kMaxRequestIdBytes, " bytes"));
  }
  Request r;
  r.request_id = proto.request_id().empty() ? NewRequestId() : proto.request_id();
  r.deadline = deadline;
  switch (proto.input_case()) {
    case v1::GenerateRequest::kTokenIds:
      r.prompt.assign(proto.token_ids().ids().begin(), proto.token_ids().ids().end());
      if (r.prompt.empty()) return absl::InvalidArgumentError("token_ids.ids must not be empty");
      break;
    case v1::GenerateRequest::kText: {
      const Tokenizer* tokenizer = engine.tokenizer();
      if (tokenizer == nullptr) {
        return absl::InvalidArgumentError(
            "text input needs a tokenizer and this model has none (no tokenizer.json in its "
            "directory): send token_ids instead");
      }
      if (proto.text().empty()) return absl::InvalidArgumentError("text must not be empty");
      if (proto.text().size() > kMaxTextBytes) {
        return absl::InvalidArgumentError(absl::StrCat("text of ", proto.text().size(),
                                                       " bytes exceeds the limit of ",
                                                       kMaxTextBytes, " bytes"));
      }
      auto ids = tokenizer->Encode(proto.text(), /*add_special_tokens=*/true);
      if (!ids.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("text: ", ids.status().message()));
      }
      r.prompt = *std::move(ids);
      break;
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      return absl::InvalidArgumentError("input: set either text or token_ids");
  }
  const v1::SamplingParams& s = proto.sampling();
  if (s.has_temperature()) r.sampling.temperature = s.temperature();
  if (s.has_top_k()) r.sampling.top_k = s.top_k();
  if (s.has_top_p()) r.sampling.top_p = s.top_p();
  if (s.has_seed()) r.sampling.seed = s.seed();
  if (s.has_repetition_penalty()) r.sampling.repetition_penalty = s.repetition_penalty();
  if (s.has_presence_penalty()) r.sampling.presence_penalty = s.presence_penalty();
  if (s.has_frequency_penalty()) r.sampling.frequency_penalty = s.frequency_penalty();
  if (s.has_min_p()) r.sampling.min_p = s.min_p();
  r.sampling.min_new_tokens = s.min_new_tokens();
  if (s.has_logprobs()) r.sampling.logprobs = s.logprobs();
  if (s.constraint_case() != v1::SamplingParams::CONSTRAINT_NOT_SET) {
    absl::StatusOr<grammar::ConstraintSpec> spec = ToConstraintSpec(s);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> compiled =
        engine.CompileConstraint(*spec);
    if (!compiled.ok()) return compiled.status();
    r.constraint = *std::move(compiled);
  }
  const v1::StoppingCriteria& st = proto.stopping();
  if (st.has_max_new_tokens()) r.stopping.max_new_tokens = st.max_new_tokens();
  r.stopping.stop.assign(st.stop().begin(), st.stop().end());
  r.stopping.stop_token_ids.assign(st.stop_token_ids().begin(), st.stop_token_ids().end());
  r.stopping.ignore_eos = st.ignore_eos();
  return r;
}

v1::FinishReason ToProto(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return v1::FINISH_REASON_LENGTH;
    case FinishReason::kEos: return v1::FINISH_REASON_EOS;
    case FinishReason::kStop: return v1::FINISH_REASON_STOP;
    case FinishReason::kNone: break;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

std::string FinishReasonLabel(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kEos: return "eos";
    case FinishReason::kStop: return "stop";
    case FinishReason::kNone: break;
  }
  return "error";
}

void FillModelInfo(const ModelInfo& info, v1::GetModelInfoResponse& out) {
  out.set_model_name(info.model_name);
  out.set_architecture(info.architecture);
  out.set_vocab_size(info.vocab_size);
  out.set_max_context(info.max_context);
  for (int32_t id : info.eos_token_ids) out.add_eos_token_ids(id);
  if (info.bos_token_id) out.set_bos_token_id(*info.bos_token_id);
  out.set_kv_block_size(info.kv_block_size);
  out.set_kv_num_blocks(info.kv_num_blocks);
  out.set_has_tokenizer(info.has_tokenizer);
  out.set_device(info.device);
  out.set_dtype(info.dtype);
  out.set_default_max_new_tokens(info.default_max_new_tokens);
}

}  // namespace kvserve
