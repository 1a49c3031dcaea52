// Objects and arrays. Properties come in the schema's order: the required
// ones always, each optional one or not, then (where additionalProperties
// allows) any others, so that the grammar stays small and unambiguous.
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/json_schema_converter.h"

namespace kvserve::grammar {
namespace {

// Property names longer than this are refused where names must be excluded
// from additional properties (the exclusion nests one group per character).
constexpr size_t kMaxExcludedNameBytes = 256;
// Tuples longer than this are refused (each optional item nests a group).
constexpr size_t kMaxPrefixItems = 256;

const SchemaJson& AnyValue() {
  static const SchemaJson kTrue = true;
  return kTrue;
}

// "ws "," ws x" under a count: *, +, ?, {n}, {n,}, {m,n}.
std::string Repeated(const std::string& item, int64_t min, std::optional<int64_t> max) {
  if (max && *max == 0) return "";
  std::string q;
  if (!max) {
    q = min == 0 ? "*" : min == 1 ? "+" : absl::StrFormat("{%d,}", min);
  } else if (min == 0 && *max == 1) {
    q = "?";
  } else if (min == *max) {
    if (min == 1) return item;
    q = absl::StrFormat("{%d}", min);
  } else {
    q = absl::StrFormat("{%d,%d}", min, *max);
  }
  return absl::StrCat("( ", item, " )", q);
}

struct TrieNode {
  bool end = false;
  std::map<uint32_t, std::unique_ptr<TrieNode>> children;
};

}  // namespace

std::string SchemaConverter::KeyOtherThan(const std::vector<std::string>& names) {
  const std::string plain = Builtin("plain-char");
  const CodePointSet plain_set = Complement({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  TrieNode root;
  for (const std::string& name : names) {
    // A name with a character that must be escaped cannot be spelled by
    // plain characters, so it needs no excluding.
    std::vector<uint32_t> cps;
    bool spellable = true;
    for (size_t pos = 0; pos < name.size();) {
      uint32_t cp = 0;
      const int len = DecodeUtf8(name, pos, cp);
      if (len == 0 || !Contains(plain_set, cp)) {
        spellable = false;
        break;
      }
      cps.push_back(cp);
      pos += len;
    }
    if (!spellable) continue;
    TrieNode* node = &root;
    for (uint32_t cp : cps) {
      auto& child = node->children[cp];
      if (!child) child = std::make_unique<TrieNode>();
      node = child.get();
    }
    node->end = true;
  }
  // The rest of a key after the prefix spelled to `node`: a name's next
  // character leads on in the trie, any other one frees the key.
  const auto rest = [&](const auto& self, const TrieNode& node) -> std::string {
    std::vector<std::string> parts;
    if (!node.end) parts.push_back("\"\"");
    CodePointSet next;
    for (const auto& [cp, child] : node.children) next.push_back({cp, cp});
    const CodePointSet others = Subtract(plain_set, next);
    if (!others.empty()) parts.push_back(absl::StrCat(GbnfClass(others), " ", plain, "*"));
    for (const auto& [cp, child] : node.children) {
      parts.push_back(absl::StrCat(GbnfLiteralOf({cp}), " ", self(self, *child)));
    }
    return parts.size() == 1 ? parts[0] : "(" + absl::StrJoin(parts, " | ") + ")";
  };
  return AddRule("key", absl::StrCat("\"\\\"\" ", rest(rest, root), " \"\\\"\""));
}

absl::StatusOr<std::string> SchemaConverter::VisitObject(const SchemaJson& schema,
                                                         const std::string& pointer,
                                                         const std::string& hint, int depth) {
  // A { consumes input: $ref cycles through here are not left recursion.
  std::set<std::string> outer_refs;
  std::swap(outer_refs, unconsumed_refs_);
  struct Restore {
    std::set<std::string>& target;
    std::set<std::string>& saved;
    ~Restore() { std::swap(target, saved); }
  } restore{unconsumed_refs_, outer_refs};

  struct Property {
    std::string name;
    const SchemaJson* schema;
    std::string pointer;
    bool required = false;
  };
  std::vector<Property> props;
  const SchemaJson* properties = nullptr;
  if (auto it = schema.find("properties"); it != schema.end()) {
    if (!it->is_object()) return Error(pointer + "/properties", "properties must be an object");
    properties = &*it;
    for (const auto& [name, sub] : it->items()) {
      props.push_back({name, &sub, absl::StrCat(pointer, "/properties/", PointerToken(name))});
    }
  }
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array())
      return Error(pointer + "/required", "required must be an array of strings");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return Error(absl::StrCat(pointer, "/required/", i), "required must list strings");
      }
      const std::string name = (*it)[i].get<std::string>();
      auto prop = std::find_if(props.begin(), props.end(),
                               [&](const Property& p) { return p.name == name; });
      if (prop == props.end()) {
        props.push_back({name, &AnyValue(), absl::StrCat(pointer, "/required/", i)});
        prop = props.end() - 1;
      }
      prop->required = true;
    }
  }
  // additionalProperties: absent means false when `properties` is given
  // (strict, as OpenAI's strict mode, vLLM and xgrammar read schemas), true
  // otherwise.
  const SchemaJson* additional = properties != nullptr ? nullptr : &AnyValue();
  if (auto it = schema.find("additionalProperties"); it != schema.end()) {
    if (!it->is_boolean() && !it->is_object()) {
      return Error(pointer + "/additionalProperties",
                   "additionalProperties must be a boolean or a schema");
    }
    additional = it->is_boolean() && !it->get<bool>() ? nullptr : &*it;
  }
  if (props.empty() && additional != nullptr && *additional == true) return Builtin("object");

  const std::string ws = Builtin("ws");
  std::vector<std::string> kvs;  // one per kept property
  std::vector<bool> required;
  std::vector<std::string> names;
  for (const Property& prop : props) {
    names.push_back(prop.name);
    if (*prop.schema == false) {
      if (prop.required) return Error(prop.pointer, "a required property has schema false");
      continue;  // can never be present
    }
    auto value = Visit(*prop.schema, prop.pointer, absl::StrCat(hint, "-", prop.name), depth + 1);
    if (!value.ok()) return value.status();
    kvs.push_back(absl::StrCat(GbnfLiteral(SchemaJson(prop.name).dump()), " ", ws, " \":\" ", ws,
                               " ", *value));
    required.push_back(prop.required);
  }
  std::string more;  // additional members after the listed ones
  std::string more_first;
  if (additional != nullptr) {
    std::string key;
    if (names.empty()) {
      key = Builtin("string");
    } else {
      for (const std::string& name : names) {
        if (name.size() > kMaxExcludedNameBytes) {
          return Error(pointer, absl::StrCat("with additionalProperties, property names longer "
                                             "than ",
                                             kMaxExcludedNameBytes, " bytes are not supported"));
        }
      }
      key = KeyOtherThan(names);
    }
    auto value =
        Visit(*additional, pointer + "/additionalProperties", hint + "-additional", depth + 1);
    if (!value.ok()) return value.status();
    const std::string kv =
        AddRule(hint + "-additional-kv", absl::StrCat(key, " ", ws, " \":\" ", ws, " ", *value));
    more = absl::StrCat("( ", ws, " \",\" ", ws, " ", kv, " )*");
    more_first = absl::StrCat(kv, " ", more);
  }

  const size_t n = kvs.size();
  size_t first_required = n;
  for (size_t i = 0; i < n; ++i) {
    if (required[i]) {
      first_required = i;
      break;
    }
  }
  // tails[i]: the members after property i-1 (a comma before each).
  std::vector<std::string> tails(n + 1);
  tails[n] = more;
  for (size_t i = n; i-- > 0;) {
    std::string item = absl::StrCat(ws, " \",\" ", ws, " ", kvs[i]);
    if (!required[i]) item = absl::StrCat("( ", item, " )?");
    tails[i] = tails[i + 1].empty() ? item : absl::StrCat(item, " ", tails[i + 1]);
    // Several first members share the tails: named rules keep the grammar
    // linear in the number of properties.
    if (first_required > 0 && i > 0) tails[i] = AddRule(hint + "-tail", tails[i]);
  }
  std::vector<std::string> firsts;
  for (size_t i = 0; i < n && i <= first_required; ++i) {
    firsts.push_back(tails[i + 1].empty() ? kvs[i] : absl::StrCat(kvs[i], " ", tails[i + 1]));
  }
  const bool can_be_empty = first_required == n;
  if (can_be_empty && !more_first.empty()) firsts.push_back(more_first);
  std::string body;
  if (firsts.empty()) {
    body = absl::StrCat("\"{\" ", ws, " \"}\"");
  } else {
    const std::string members =
        firsts.size() == 1 ? firsts[0] : "( " + absl::StrJoin(firsts, " | ") + " )";
    body = can_be_empty ? absl::StrCat("\"{\" ", ws, " ( ", members, " ", ws, " )? \"}\"")
                        : absl::StrCat("\"{\" ", ws, " ", members, " ", ws, " \"}\"");
  }
  return AddRule(hint, body);
}

absl::StatusOr<std::string> SchemaConverter::VisitArray(const SchemaJson& schema,
                                                        const std::string& pointer,
                                                        const std::string& hint, int depth) {
  std::set<std::string> outer_refs;
  std::swap(outer_refs, unconsumed_refs_);
  struct Restore {
    std::set<std::string>& target;
    std::set<std::string>& saved;
    ~Restore() { std::swap(target, saved); }
  } restore{unconsumed_refs_, outer_refs};

  // prefixItems (2020-12) or an items array (drafts 4 to 2019-09) list the
  // first items' schemas; items or additionalItems the rest's.
  const SchemaJson* prefix = nullptr;
  std::string prefix_pointer;
  const SchemaJson* rest = &AnyValue();
  std::string rest_pointer;
  const auto items = schema.find("items");
  if (auto it = schema.find("prefixItems"); it != schema.end()) {
    prefix = &*it;
    prefix_pointer = pointer + "/prefixItems";
    if (items != schema.end()) rest = &*items, rest_pointer = pointer + "/items";
  } else if (items != schema.end() && items->is_array()) {
    prefix = &*items;
    prefix_pointer = pointer + "/items";
    if (auto add = schema.find("additionalItems"); add != schema.end()) {
      rest = &*add, rest_pointer = pointer + "/additionalItems";
    }
  } else if (items != schema.end()) {
    rest = &*items, rest_pointer = pointer + "/items";
  }
  if (prefix != nullptr && !prefix->is_array()) {
    return Error(prefix_pointer, "must be an array of schemas");
  }
  const size_t prefix_size = prefix != nullptr ? prefix->size() : 0;
  if (prefix_size > kMaxPrefixItems) {
    return Error(prefix_pointer,
                 absl::StrCat("more than ", kMaxPrefixItems, " item schemas are not supported"));
  }
  auto min_items = Count(schema, "minItems", pointer);
  if (!min_items.ok()) return min_items.status();
  auto max_items = Count(schema, "maxItems", pointer);
  if (!max_items.ok()) return max_items.status();
  const int64_t lo = min_items->value_or(0);
  std::optional<int64_t> hi = *max_items;
  if (*rest == false) hi = std::min<int64_t>(hi.value_or(prefix_size), prefix_size);
  if (hi && lo > *hi) {
    return Error(pointer,
                 absl::StrCat("no array has at least ", lo, " and at most ", *hi, " items"));
  }
  if (prefix_size == 0 && *rest == true && lo == 0 && !hi) return Builtin("array");

  const std::string ws = Builtin("ws");
  const std::string comma = absl::StrCat(ws, " \",\" ", ws, " ");
  // Items from position `kept` on, each after a comma: the rest schema's.
  const size_t kept = hi ? std::min<size_t>(prefix_size, *hi) : prefix_size;
  std::string tail;
  if (!hi || *hi > static_cast<int64_t>(kept)) {
    auto item = Visit(*rest, rest_pointer, hint + "-item", depth + 1);
    if (!item.ok()) return item.status();
    const int64_t need = std::max<int64_t>(lo - static_cast<int64_t>(kept), 0);
    std::optional<int64_t> room;
    if (hi) room = *hi - static_cast<int64_t>(kept);
    if (kept == 0) {
      // The first item has no comma before it.
      std::optional<int64_t> more_room;
      if (room) more_room = *room - 1;
      const std::string more = Repeated(comma + *item, std::max<int64_t>(need - 1, 0), more_room);
      tail = more.empty() ? *item : absl::StrCat(*item, " ", more);
    } else {
      tail = Repeated(comma + *item, need, room);
    }
  }
  // Then the prefix items, last to first; those past minItems are optional.
  for (size_t i = kept; i-- > 0;) {
    auto item = Visit((*prefix)[i], absl::StrCat(prefix_pointer, "/", i),
                      absl::StrCat(hint, "-", i), depth + 1);
    if (!item.ok()) return item.status();
    std::string part = i == 0 ? *item : comma + *item;
    if (!tail.empty()) absl::StrAppend(&part, " ", tail);
    tail = i > 0 && static_cast<int64_t>(i) >= lo ? absl::StrCat("( ", part, " )?") : part;
  }
  std::string body;
  if (tail.empty()) {
    body = absl::StrCat("\"[\" ", ws, " \"]\"");
  } else if (lo == 0) {
    body = absl::StrCat("\"[\" ", ws, " ( ", tail, " ", ws, " )? \"]\"");
  } else {
    body = absl::StrCat("\"[\" ", ws, " ", tail, " ", ws, " \"]\"");
  }
  return AddRule(hint, body);
}

}  // namespace kvserve::grammar
