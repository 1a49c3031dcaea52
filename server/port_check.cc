#include "server/port_check.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace kvserve {
namespace {

// Closes the probe sockets when the check ends, whichever way.
class Sockets {
 public:
  ~Sockets() {
    for (int fd : fds_) close(fd);
  }
  void Keep(int fd) { fds_.push_back(fd); }

 private:
  std::vector<int> fds_;
};

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

// Binds and listens on one address as the real listener will (SO_REUSEADDR,
// so a previous run's TIME_WAIT connections do not count; no SO_REUSEPORT, so
// a listener is found). Returns errno, 0 when the port is free.
int Probe(const addrinfo& address, Sockets& sockets) {
  const int fd = socket(address.ai_family, address.ai_socktype, address.ai_protocol);
  if (fd < 0) return errno;
  sockets.Keep(fd);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, address.ai_addr, address.ai_addrlen) != 0) return errno;
  if (listen(fd, 1) != 0) return errno;
  return 0;
}

}  // namespace

absl::Status CheckPortsFree(const std::vector<PortToCheck>& ports) {
  Sockets sockets;  // all open until every port is checked
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortToCheck& p = ports[i];
    if (p.port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", p.flag, " must be in [0, 65535], got ", p.port));
    }
    if (p.port <= 0) continue;
    // gRPC takes "[::1]" for an IPv6 address; getaddrinfo wants it bare.
    const std::string host(absl::StripSuffix(absl::StripPrefix(p.host, "["), "]"));
    addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(p.port);
    if (int e = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
        e != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", p.flag, ": cannot resolve host \"", p.host, "\": ", gai_strerror(e)));
    }
    std::unique_ptr<addrinfo, AddrInfoDeleter> addresses(found);
    for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
      // Other errors (no IPv6 on this machine, say) are the real listener's
      // to report, or to skip as gRPC does for one family of a host name.
      if (Probe(*a, sockets) != EADDRINUSE) continue;
      std::string message = absl::StrCat("--", p.flag, ": cannot listen on ", p.host, ":", p.port,
                                         ": the port is already in use");
      for (size_t j = 0; j < i; ++j) {
        if (ports[j].port == p.port) {
          return absl::UnavailableError(
              absl::StrCat(message, " (--", ports[j].flag, " names it too)"));
        }
      }
      return absl::UnavailableError(
          absl::StrCat(message,
                       " (another kvserve, or another program, listens there: `ss -ltnp "
                       "'sport = :",
                       p.port, "'` shows which)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvserve
