// Status propagation helpers (Abseil ships Status but not these macros).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KVSERVE_CONCAT_INNER(a, b) a##b
#define KVSERVE_CONCAT(a, b) KVSERVE_CONCAT_INNER(a, b)

/// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _kv_status = (expr);        \
    if (!_kv_status.ok()) return _kv_status;   \
  } while (0)

/// `ASSIGN_OR_RETURN(auto x, MakeX());` unwraps a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(KVSERVE_CONCAT(_kv_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
