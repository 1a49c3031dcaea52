// Engine::CompileConstraint: the vocabulary is built from the tokenizer on
// the first constrained request (most servers never see one), outside the
// compile-time limit.
#include "absl/strings/str_cat.h"
#include "engine/core/engine.h"
#include "engine/text/token_bytes.h"

namespace kvserve {

absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> Engine::CompileConstraint(
    const grammar::ConstraintSpec& spec) const {
  if (tokenizer() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling.", grammar::ConstraintFieldName(spec.kind),
        ": a constraint needs the model's tokenizer, and this model has none"));
  }
  std::call_once(constraint_compiler_once_, [this] {
    auto vocabulary =
        std::make_shared<const grammar::TokenVocabulary>(MidTextTokenBytes(*tokenizer()));
    constraint_compiler_ =
        std::make_unique<grammar::ConstraintCompiler>(std::move(vocabulary), config_.constraints);
  });
  absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> compiled =
      constraint_compiler_->Compile(spec);
  if (!compiled.ok()) {
    // The API's field: "sampling.json_schema: at /properties/age: ...".
    return absl::Status(compiled.status().code(),
                        absl::StrCat("sampling.", compiled.status().message()));
  }
  return compiled;
}

}  // namespace kvserve
