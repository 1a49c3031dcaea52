// jinja2 decides scopes when it compiles a template: a name assigned in a
// scope (the template's top level, a for-loop body, a macro body) is that
// scope's own variable from the scope's start. If the scope has not read the
// name before assigning it, and no enclosing scope mentions it, the variable
// starts undefined, so a nested loop or macro that reads it before the
// assignment sees undefined rather than the caller's value. This pass finds
// those names (jinja2's idtracking rules, including "assigned in only some
// branches of an if: resolved from outside") so the interpreter can start
// each scope with them undefined.
#pragma once

#include "engine/text/chat_template/ast.h"

namespace kvserve::chat_template {

/// Fills Program::undefined_at_entry and Stmt::undefined_at_entry of every
/// for loop and macro.
void AnalyzeScopes(Program& program);

}  // namespace kvserve::chat_template
