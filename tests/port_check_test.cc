// A busy port is refused before the model loads (server/port_check.h), and
// the gRPC listener no longer shares a port through SO_REUSEPORT.
#include "server/port_check.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server_test_util.h"

namespace kvserve {
namespace {

using ::testing::HasSubstr;

// A socket listening on a free loopback port, with SO_REUSEPORT as gRPC sets
// it by default: the check must find it all the same.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(PortCheckTest, FreePortsPass) {
  int free_port;
  {
    Listener probe;
    free_port = probe.port();
  }
  EXPECT_TRUE(CheckPortsFree({{"port", "127.0.0.1", free_port},
                              {"http_port", "127.0.0.1", 0},
                              {"metrics_port", "127.0.0.1", -1}})
                  .ok());
}

TEST(PortCheckTest, BusyPortNamesTheFlag) {
  Listener busy;
  for (const char* flag : {"port", "http_port", "metrics_port"}) {
    absl::Status s = CheckPortsFree({{flag, "127.0.0.1", busy.port()}});
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("--", flag, ": cannot listen on 127.0.0.1:",
                                                    busy.port(), ": the port is already in use")));
  }
  // The wildcard address overlaps the loopback one.
  EXPECT_FALSE(CheckPortsFree({{"port", "0.0.0.0", busy.port()}}).ok());
}

TEST(PortCheckTest, TwoFlagsOnOnePortAreFound) {
  int port;
  {
    Listener probe;
    port = probe.port();
  }
  absl::Status s = CheckPortsFree({{"port", "0.0.0.0", port}, {"http_port", "0.0.0.0", port}});
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--http_port: "));
  EXPECT_THAT(s.message(), HasSubstr("(--port names it too)"));
}

TEST(PortCheckTest, BadPortOrHostIsAnArgumentError) {
  EXPECT_TRUE(absl::IsInvalidArgument(CheckPortsFree({{"http_port", "127.0.0.1", 70000}})));
  absl::Status s = CheckPortsFree({{"metrics_port", "no-such-host.invalid", 9464}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--metrics_port: cannot resolve host"));
}

TEST(PortCheckTest, SecondGrpcServerOnABusyPortFails) {
  std::unique_ptr<testing::TestServer> first = testing::StartTestServer("");
  ASSERT_NE(first, nullptr);
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = first->server->port();
  options.metrics_port = -1;
  auto second = KvServer::Start(options, *first->engine, *first->registry);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("--port: cannot listen on 127.0.0.1:"));
}

}  // namespace
}  // namespace kvserve
