// Python's operators on template values: arithmetic with int/float
// promotion and floor division, string and list concatenation and repetition,
// `~`, and slice index arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/text/chat_template/value.h"

namespace kvserve::chat_template {

/// `left op right` for + - * / // % ** ~; fails like Python on unsupported
/// operand types, division by zero and (64-bit) integer overflow.
Value BinaryOp(const std::string& op, const Value& left, const Value& right);
/// `op operand` for - + not.
Value UnaryOp(const std::string& op, const Value& operand);
/// Python's slice.indices() expanded: the indices [start:stop:step] selects
/// from a sequence of length n (start/stop/step may be None or undefined).
std::vector<int64_t> SliceIndices(int64_t n, const Value& start, const Value& stop, const Value& step);

}  // namespace kvserve::chat_template
