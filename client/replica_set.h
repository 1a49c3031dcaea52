// The replicas a client spreads its calls over (docs/routing.md).
//
// Targets are HOST:PORT, a comma-separated list of them, or dns:///NAME:PORT,
// which is resolved (getaddrinfo) into one replica per address and resolved
// again every `reresolve_every` or when every replica is down. Each replica is
// one channel with its own counters. A call takes the replica with the fewest
// calls in flight (ties go round-robin) among those not marked down; one that
// answered UNAVAILABLE, or whose channel is in TRANSIENT_FAILURE, is skipped
// for a back-off that doubles with each consecutive failure.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kvserve/v1/inference.grpc.pb.h"

namespace kvserve {

struct RoutingOptions {
  /// How long a replica that answered UNAVAILABLE is skipped; doubles with
  /// each consecutive failure up to `down_max`, and resets on a success.
  absl::Duration down_initial = absl::Milliseconds(500);
  absl::Duration down_max = absl::Seconds(10);
  /// dns:/// targets are resolved again this often (and whenever every replica is down).
  absl::Duration reresolve_every = absl::Seconds(30);
  /// Looks up a dns:/// name's HOST:PORT addresses; empty = getaddrinfo.
  /// (Tests, or another discovery mechanism, plug in here.)
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string& host,
                                                         const std::string& port)>
      resolve;
};

/// A snapshot of one replica's counters.
struct ReplicaStats {
  std::string address;      // HOST:PORT dialled
  std::string target;       // the target it came from (the dns:/// name, or the address)
  int64_t attempts = 0;     // calls started on it
  int64_t succeeded = 0;
  int64_t unavailable = 0;  // attempts that ended UNAVAILABLE (it was marked down)
  int64_t other_errors = 0;
  int in_flight = 0;
  bool down = false;        // marked down now
  bool listed = true;       // false once its DNS name stopped resolving to it
};

/// One replica: its channel and stub, owned by the ReplicaSet (never freed
/// before it, so a call may hold the pointer across a re-resolution).
class Replica {
 public:
  Replica(std::string address, std::string target, std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)), target_(std::move(target)), channel_(std::move(channel)),
        stub_(v1::Inference::NewStub(channel_)) {}
  const std::string& address() const { return address_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  v1::Inference::Stub& stub() { return *stub_; }

 private:
  friend class ReplicaSet;
  const std::string address_, target_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Inference::Stub> stub_;
  // Guarded by the set's mutex.
  int in_flight_ = 0;
  int consecutive_failures_ = 0;
  absl::Time down_until_ = absl::InfinitePast();
  bool listed_ = true;
  int64_t attempts_ = 0, succeeded_ = 0, unavailable_ = 0, other_errors_ = 0;
};

class ReplicaSet {
 public:
  /// Makes the channel for an address; `host` is the name it was given as
  /// (the dns:/// name, for a TLS server-name check).
  using ChannelFactory =
      std::function<std::shared_ptr<grpc::Channel>(const std::string& address, const std::string& host)>;

  /// Parses and resolves `targets`; an error names the target at fault.
  static absl::StatusOr<std::unique_ptr<ReplicaSet>> Create(const std::vector<std::string>& targets,
                                                            ChannelFactory make_channel,
                                                            RoutingOptions options = {});

  /// The replica for a call's next attempt, counted in flight until Release.
  /// Prefers replicas that are up and not in `tried`, fewest in flight first;
  /// when all are down, the one whose back-off ends first. Never null.
  Replica* Acquire(const std::vector<const Replica*>& tried = {});
  /// Ends an attempt: UNAVAILABLE marks the replica down, OK clears its failures.
  void Release(Replica* replica, grpc::StatusCode code);
  /// True when some listed replica is not in `tried` (a failover has somewhere to go).
  bool HasUntried(const std::vector<const Replica*>& tried) const;
  /// Resolves the dns:/// targets now (Acquire does it when due): new
  /// addresses become replicas, vanished ones stop being picked; a failed
  /// lookup keeps its target's replicas.
  absl::Status Refresh();

  std::vector<ReplicaStats> Stats() const;
  /// Every replica's channel (listed ones), e.g. for health checks.
  std::vector<std::shared_ptr<grpc::Channel>> Channels() const;

 private:
  struct Target {
    std::string spec;  // as given
    std::string host, port;
    bool dns = false;  // dns:///: resolved into many addresses, again later
  };
  ReplicaSet(std::vector<Target> targets, ChannelFactory make_channel, RoutingOptions options)
      : targets_(std::move(targets)), make_channel_(std::move(make_channel)), options_(options) {}
  void MaybeReresolve();
  bool IsDown(const Replica& r, absl::Time now) const;

  const std::vector<Target> targets_;
  const ChannelFactory make_channel_;
  const RoutingOptions options_;
  bool has_dns_ = false;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Replica>> replicas_;  // only grows: pointers stay valid
  uint64_t next_ = 0;                               // round-robin start among ties
  absl::Time next_resolve_ = absl::InfiniteFuture();
  bool resolving_ = false;
};

}  // namespace kvserve
