// tokenizer.json "decoder": turns the tokens of a sequence of ids back into
// text. Each step maps a list of token strings to a new list, as Hugging
// Face's decode_chain does; the result is their concatenation.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvserve::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const = 0;
  /// Whether this decoder joins runs of <0xXX> tokens (ByteFallback), so that
  /// a token appended to a run can change the text of the whole run.
  virtual bool JoinsByteRuns() const { return false; }
};

/// The byte a "<0xXX>" token stands for (hex read as Rust's u8::from_str_radix does).
std::optional<unsigned char> ByteFallbackByte(absl::string_view token);

/// Parses the "decoder" value (Sequence, ByteLevel, Replace, ByteFallback,
/// Fuse, Strip, Metaspace); null: nullptr.
absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const nlohmann::json& value,
                                                      absl::string_view path);

}  // namespace kvserve::hf
