#include "client/replica_set.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvserve {
namespace {

// A re-resolution forced by every replica being down waits at least this
// long after the last one, so a dead DNS name is not queried on every call.
constexpr absl::Duration kMinResolveGap = absl::Seconds(1);

struct Resolved {
  std::string address, target, host;
};

// "NAME:PORT" or "[V6]:PORT" → (NAME, PORT).
absl::Status SplitHostPort(const std::string& spec, absl::string_view hostport, std::string* host,
                           std::string* port) {
  const size_t colon = hostport.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == hostport.size() || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target \"", spec, "\": expected dns:///NAME:PORT"));
  }
  absl::string_view h = hostport.substr(0, colon);
  if (absl::ConsumePrefix(&h, "[") && !absl::ConsumeSuffix(&h, "]")) {
    return absl::InvalidArgumentError(absl::StrCat("target \"", spec, "\": unclosed [ in the host"));
  }
  *host = std::string(h);
  *port = std::string(hostport.substr(colon + 1));
  return absl::OkStatus();
}

// getaddrinfo: every TCP address of `host`, as dialable HOST:PORT strings.
absl::StatusOr<std::vector<std::string>> LookUp(const std::string& spec, const std::string& host,
                                                const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &list); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("target \"", spec, "\": cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char ip[INET6_ADDRSTRLEN] = {};
    std::string address;
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, ip, sizeof(ip));
      address = absl::StrCat(ip, ":", port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, ip, sizeof(ip));
      address = absl::StrCat("[", ip, "]:", port);
    } else {
      continue;
    }
    if (seen.insert(address).second) out.push_back(address);
  }
  freeaddrinfo(list);
  if (out.empty()) {
    return absl::UnavailableError(absl::StrCat("target \"", spec, "\": ", host, " has no address"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaSet>> ReplicaSet::Create(
    const std::vector<std::string>& targets, ChannelFactory make_channel, RoutingOptions options) {
  if (options.down_initial <= absl::ZeroDuration() || options.down_max < options.down_initial) {
    return absl::InvalidArgumentError("routing: need 0 < down_initial <= down_max");
  }
  if (options.reresolve_every <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("routing: reresolve_every must be > 0");
  }
  std::vector<Target> parsed;
  for (const std::string& entry : targets) {
    for (absl::string_view piece : absl::StrSplit(entry, ',')) {
      Target t;
      t.spec = std::string(absl::StripAsciiWhitespace(piece));
      if (t.spec.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("target list \"", entry, "\" has an empty entry"));
      }
      absl::string_view rest = t.spec;
      if (absl::ConsumePrefix(&rest, "dns:")) {
        if (!absl::ConsumePrefix(&rest, "///")) {
          return absl::InvalidArgumentError(absl::StrCat(
              "target \"", t.spec, "\": only dns:///NAME:PORT is supported (no DNS authority)"));
        }
        t.dns = true;
        if (absl::Status s = SplitHostPort(t.spec, rest, &t.host, &t.port); !s.ok()) return s;
      }
      parsed.push_back(std::move(t));
    }
  }
  if (parsed.empty()) return absl::InvalidArgumentError("no target given");
  std::unique_ptr<ReplicaSet> set(new ReplicaSet(std::move(parsed), std::move(make_channel), options));
  for (const Target& t : set->targets_) set->has_dns_ |= t.dns;
  // Every target must resolve the first time.
  if (absl::Status s = set->Refresh(); !s.ok()) return s;
  return set;
}

absl::Status ReplicaSet::Refresh() {
  // getaddrinfo blocks: it runs without the lock, then the result is merged.
  std::vector<Resolved> resolved;
  std::set<std::string> failed_targets;
  absl::Status first_error;
  for (const Target& t : targets_) {
    if (!t.dns) {
      resolved.push_back({t.spec, t.spec, ""});
      continue;
    }
    auto addresses = options_.resolve ? options_.resolve(t.host, t.port) : LookUp(t.spec, t.host, t.port);
    if (addresses.ok() && addresses->empty()) addresses = absl::UnavailableError("no address");
    if (!addresses.ok()) {
      failed_targets.insert(t.spec);
      if (first_error.ok()) {
        first_error = options_.resolve
                          ? absl::Status(addresses.status().code(),
                                         absl::StrCat("target \"", t.spec, "\": ", addresses.status().message()))
                          : addresses.status();
      }
      continue;
    }
    for (const std::string& a : *addresses) resolved.push_back({a, t.spec, t.host});
  }
  std::lock_guard<std::mutex> lock(mu_);
  next_resolve_ = absl::Now() + options_.reresolve_every;
  // A name that failed to resolve this time keeps its replicas; one that
  // resolved drops the addresses it no longer has.
  std::set<std::string> present;
  for (const Resolved& r : resolved) present.insert(r.address);
  for (auto& replica : replicas_) {
    if (failed_targets.count(replica->target_) == 0) replica->listed_ = present.count(replica->address_) > 0;
  }
  for (const Resolved& r : resolved) {
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const auto& x) { return x->address_ == r.address; });
    if (it != replicas_.end()) continue;
    replicas_.push_back(std::make_unique<Replica>(r.address, r.target, make_channel_(r.address, r.host)));
  }
  return first_error;  // Create refuses it; a later refresh keeps what it had
}

bool ReplicaSet::IsDown(const Replica& r, absl::Time now) const {
  return now < r.down_until_ ||
         r.channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
}

void ReplicaSet::MaybeReresolve() {
  if (!has_dns_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const absl::Time now = absl::Now();
    if (resolving_) return;
    bool all_down = true;
    for (const auto& r : replicas_) all_down &= !r->listed_ || IsDown(*r, now);
    const absl::Time last = next_resolve_ - options_.reresolve_every;
    if (now < next_resolve_ && !(all_down && now >= last + kMinResolveGap)) return;
    resolving_ = true;
  }
  (void)Refresh();  // on failure the replicas stay as they were
  std::lock_guard<std::mutex> lock(mu_);
  resolving_ = false;
}

Replica* ReplicaSet::Acquire(const std::vector<const Replica*>& tried) {
  MaybeReresolve();
  std::lock_guard<std::mutex> lock(mu_);
  if (replicas_.size() == 1) {  // nothing to choose: no clock, no channel state
    ++replicas_[0]->in_flight_;
    ++replicas_[0]->attempts_;
    return replicas_[0].get();
  }
  const absl::Time now = absl::Now();
  bool any_listed = false;
  for (const auto& r : replicas_) any_listed |= r->listed_;
  // Tiers: 0 up and untried, 1 down and untried, 2 tried. Within tier 1 the
  // back-off that ends first wins, otherwise the fewest in flight; the scan
  // starts one further each call, so ties go round-robin.
  Replica* best = nullptr;
  int best_tier = 3;
  const size_t n = replicas_.size();
  const size_t start = next_++ % n;
  for (size_t i = 0; i < n; ++i) {
    Replica* r = replicas_[(start + i) % n].get();
    if (any_listed && !r->listed_) continue;
    const bool was_tried = std::find(tried.begin(), tried.end(), r) != tried.end();
    const int tier = was_tried ? 2 : (IsDown(*r, now) ? 1 : 0);
    bool better = tier < best_tier;
    if (!better && tier == best_tier) {
      better = tier == 1 ? r->down_until_ < best->down_until_ : r->in_flight_ < best->in_flight_;
    }
    if (better) {
      best = r;
      best_tier = tier;
    }
  }
  ++best->in_flight_;
  ++best->attempts_;
  return best;
}

void ReplicaSet::Release(Replica* replica, grpc::StatusCode code) {
  std::lock_guard<std::mutex> lock(mu_);
  --replica->in_flight_;
  if (code == grpc::StatusCode::OK) {
    ++replica->succeeded_;
    replica->consecutive_failures_ = 0;
    replica->down_until_ = absl::InfinitePast();
  } else if (code == grpc::StatusCode::UNAVAILABLE) {
    ++replica->unavailable_;
    const int n = std::min(++replica->consecutive_failures_, 30);
    replica->down_until_ =
        absl::Now() + std::min(options_.down_initial * std::ldexp(1.0, n - 1), options_.down_max);
  } else {
    // Cancelled, deadline, a bad request: the caller's doing, not the replica's health.
    ++replica->other_errors_;
  }
}

bool ReplicaSet::HasUntried(const std::vector<const Replica*>& tried) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : replicas_) {
    if (r->listed_ && std::find(tried.begin(), tried.end(), r.get()) == tried.end()) return true;
  }
  return false;
}

std::vector<ReplicaStats> ReplicaSet::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  std::vector<ReplicaStats> out;
  for (const auto& r : replicas_) {
    out.push_back({r->address_, r->target_, r->attempts_, r->succeeded_, r->unavailable_,
                   r->other_errors_, r->in_flight_, now < r->down_until_, r->listed_});
  }
  return out;
}

std::vector<std::shared_ptr<grpc::Channel>> ReplicaSet::Channels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (const auto& r : replicas_) {
    if (r->listed_) out.push_back(r->channel_);
  }
  return out;
}

}  // namespace kvserve
