#include "engine/text/chat_template/scope_analysis.h"

#include <algorithm>
#include <set>
#include <string>

namespace kvserve::chat_template {
namespace {

using Names = std::set<std::string>;

// One scope's symbols while its body is visited in order.
struct Symbols {
  Names referenced;  // loaded or stored so far in this scope
  Names stored;
  Names undefined;   // stored before any reference, unknown to enclosing scopes
};

class ScopeAnalyzer {
 public:
  // Analyzes one scope whose enclosing scopes mention `outer`; returns the
  // names it starts undefined, and adds every name it mentions to *mentioned.
  std::vector<std::string> AnalyzeScope(const Body& body, const Names& outer,
                                        const std::vector<std::string>& parameters,
                                        const std::vector<const Expr*>& entry_loads,
                                        Names* mentioned) {
    Symbols symbols;
    for (const std::string& p : parameters) {
      symbols.referenced.insert(p);
      symbols.stored.insert(p);
    }
    for (const Expr* e : entry_loads) Load(*e, symbols);
    std::vector<Stmt*> nested;
    VisitBody(body, outer, symbols, &nested);
    // Nested scopes see this scope's names as enclosing ones.
    Names inner_outer = outer;
    inner_outer.insert(symbols.referenced.begin(), symbols.referenced.end());
    for (Stmt* s : nested) AnalyzeNested(*s, inner_outer);
    if (mentioned != nullptr) mentioned->insert(symbols.referenced.begin(), symbols.referenced.end());
    return std::vector<std::string>(symbols.undefined.begin(), symbols.undefined.end());
  }

  void AnalyzeNested(Stmt& s, const Names& outer) {
    if (s.kind == StmtKind::kFor) {
      std::vector<const Expr*> loads;
      if (s.filter) loads.push_back(s.filter.get());
      std::vector<std::string> params = s.targets;
      params.push_back("loop");
      s.undefined_at_entry = AnalyzeScope(s.bodies[0], outer, params, loads, nullptr);
    } else if (s.kind == StmtKind::kMacro) {
      std::vector<const Expr*> loads;
      for (const ExprPtr& d : s.defaults) {
        if (d) loads.push_back(d.get());
      }
      s.undefined_at_entry = AnalyzeScope(s.bodies[0], outer, s.targets, loads, nullptr);
    }
  }

 private:
  void Load(const Expr& e, Symbols& symbols) {
    if (e.kind == ExprKind::kName) symbols.referenced.insert(e.name);
    for (const ExprPtr& child : e.children) {
      if (child) Load(*child, symbols);
    }
    for (const auto& [key, value] : e.keywords) Load(*value, symbols);
  }

  void Store(const std::string& name, const Names& outer, Symbols& symbols) {
    if (!symbols.referenced.count(name) && !outer.count(name)) symbols.undefined.insert(name);
    symbols.referenced.insert(name);
    symbols.stored.insert(name);
  }

  void VisitBody(const Body& body, const Names& outer, Symbols& symbols, std::vector<Stmt*>* nested) {
    for (const StmtPtr& stmt : body) Visit(*stmt, outer, symbols, nested);
  }

  void Visit(Stmt& s, const Names& outer, Symbols& symbols, std::vector<Stmt*>* nested) {
    switch (s.kind) {
      case StmtKind::kText:
      case StmtKind::kBreak:
      case StmtKind::kContinue: return;
      case StmtKind::kPrint: Load(*s.expr, symbols); return;
      case StmtKind::kSet:
        Load(*s.expr, symbols);
        if (!s.name.empty()) {
          symbols.referenced.insert(s.targets[0]);  // ns.attr = ...: loads ns
        } else {
          for (const std::string& t : s.targets) Store(t, outer, symbols);
        }
        return;
      case StmtKind::kSetBlock:
        VisitBody(s.bodies[0], outer, symbols, nested);
        Store(s.targets[0], outer, symbols);
        return;
      case StmtKind::kMacro:
        Store(s.name, outer, symbols);
        nested->push_back(&s);
        return;
      case StmtKind::kFor:
        Load(*s.expr, symbols);
        VisitBody(s.else_body, outer, symbols, nested);
        nested->push_back(&s);
        return;
      case StmtKind::kIf: VisitIf(s, outer, symbols, nested); return;
    }
  }

  // jinja2 visits an if as three branches (body, all elifs, else), each from
  // a copy of the scope's symbols; a name assigned in only some of them is
  // resolved from outside at the scope's start, not undefined.
  void VisitIf(Stmt& s, const Names& outer, Symbols& symbols, std::vector<Stmt*>* nested) {
    Load(*s.conditions[0], symbols);
    std::vector<Symbols> branches(3, symbols);
    VisitBody(s.bodies[0], outer, branches[0], nested);
    for (size_t i = 1; i < s.conditions.size(); ++i) {
      Load(*s.conditions[i], branches[1]);
      // Each elif is itself an if nested in the elif branch; its partial
      // assignments are approximated by the elif branch as a whole.
      VisitBody(s.bodies[i], outer, branches[1], nested);
    }
    if (s.bodies.size() > s.conditions.size()) VisitBody(s.bodies.back(), outer, branches[2], nested);
    Names before = symbols.stored;
    for (const Symbols& b : branches) {
      symbols.referenced.insert(b.referenced.begin(), b.referenced.end());
      symbols.stored.insert(b.stored.begin(), b.stored.end());
      symbols.undefined.insert(b.undefined.begin(), b.undefined.end());
    }
    for (const Symbols& b : branches) {
      for (const std::string& name : b.stored) {
        if (before.count(name)) continue;
        bool in_all = std::all_of(branches.begin(), branches.end(),
                                  [&](const Symbols& o) { return o.stored.count(name) > 0; });
        if (!in_all) symbols.undefined.erase(name);
      }
    }
  }
};

}  // namespace

void AnalyzeScopes(Program& program) {
  ScopeAnalyzer analyzer;
  program.undefined_at_entry = analyzer.AnalyzeScope(program.body, {}, {}, {}, nullptr);
}

}  // namespace kvserve::chat_template
