// Each token's bytes as it adds them in the middle of a text: what a
// structured-output constraint matches tokens against
// (grammar::TokenVocabulary).
#pragma once

#include <string>
#include <vector>

#include "engine/text/tokenizer.h"

namespace kvserve {

/// One entry per id below tokenizer.vocab_size(). Special tokens (those a
/// decode with skip_special_tokens drops) get an empty string: a constraint
/// never allows them. A SentencePiece-style decoder strips the leading space
/// of a text's first token ("▁{" decodes to "{" on its own), so each token is
/// decoded after an anchor token and the anchor's text removed: the space it
/// really adds mid-text is kept.
std::vector<std::string> MidTextTokenBytes(const Tokenizer& tokenizer);

}  // namespace kvserve
