// Bearer-token authentication, without a server: the token file's rules
// (comments, blank lines, refusals naming the file and line and never the
// token), the header check (missing, malformed, wrong, right; every
// configured token accepted), and the clients' token resolution.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "client/auth_token.h"
#include "gtest/gtest.h"
#include "server/auth/bearer_tokens.h"
#include "server/auth/token_file.h"

namespace kvserve {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/kvserve_auth_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TokenFileTest, SkipsCommentsAndBlankLinesAndTrims) {
  const std::string path =
      WriteFile("ok", "# the ops team's token\n\n  tok-A.1_~+/==  \r\n#tok-B\nsk-second\n");
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(*tokens, (std::vector<std::string>{"tok-A.1_~+/==", "sk-second"}));
}

TEST(TokenFileTest, RefusesAFileWithNoToken) {
  const std::string path = WriteFile("empty", "# only a comment\n\n   \n");
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("--auth_token_file " + path + " holds no token"),
            std::string::npos)
      << tokens.status();
}

TEST(TokenFileTest, RefusesAnUnreadableFile) {
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile("/nonexistent/tokens");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().message(), "--auth_token_file: cannot read /nonexistent/tokens");
}

TEST(TokenFileTest, RefusesABadTokenByLineWithoutQuotingIt) {
  const std::string path = WriteFile("bad", "good-token\nsecret with-space\n");
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("line 2: a token may hold only"), std::string::npos)
      << tokens.status();
  EXPECT_EQ(tokens.status().message().find("secret"), std::string::npos);
}

TEST(TokenFileTest, RefusesATooLongToken) {
  const std::string path = WriteFile("long", std::string(kMaxTokenBytes + 1, 'a') + "\n");
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("line 1: a token is at most 1024 bytes, this one has 1025"),
            std::string::npos)
      << tokens.status();
}

TEST(B64TokenTest, FollowsRfc6750) {
  EXPECT_TRUE(IsB64Token("abc-DEF.123_~+/"));
  EXPECT_TRUE(IsB64Token("abc=="));
  EXPECT_FALSE(IsB64Token(""));
  EXPECT_FALSE(IsB64Token("=="));
  EXPECT_FALSE(IsB64Token("a=b"));
  EXPECT_FALSE(IsB64Token("a b"));
  EXPECT_FALSE(IsB64Token("a\"b"));
}

TEST(BearerTokensTest, AcceptsEveryConfiguredTokenAndNothingElse) {
  const BearerTokens tokens({"first-token", "second"});
  EXPECT_EQ(tokens.Check("Bearer first-token"), AuthResult::kAccepted);
  EXPECT_EQ(tokens.Check("Bearer second"), AuthResult::kAccepted);
  EXPECT_EQ(tokens.Check("bearer second"), AuthResult::kAccepted);  // the scheme is case-insensitive
  EXPECT_EQ(tokens.Check("Bearer   second  "), AuthResult::kAccepted);
  EXPECT_EQ(tokens.Check("Bearer first"), AuthResult::kRejected);  // a prefix
  EXPECT_EQ(tokens.Check("Bearer first-token2"), AuthResult::kRejected);
  EXPECT_EQ(tokens.Check("Bearer SECOND"), AuthResult::kRejected);  // tokens are case-sensitive
  EXPECT_EQ(tokens.Check("Bearer " + std::string(5000, 'x')), AuthResult::kRejected);
  EXPECT_EQ(tokens.Check(std::nullopt), AuthResult::kMissing);
  EXPECT_EQ(tokens.Check(""), AuthResult::kMalformed);
  EXPECT_EQ(tokens.Check("Bearer"), AuthResult::kMalformed);
  EXPECT_EQ(tokens.Check("Bearer    "), AuthResult::kMalformed);
  EXPECT_EQ(tokens.Check("second"), AuthResult::kMalformed);
  EXPECT_EQ(tokens.Check("Basic c2Vjb25k"), AuthResult::kMalformed);
  EXPECT_EQ(tokens.Check("Bearersecond"), AuthResult::kMalformed);
}

TEST(BearerTokensTest, FailureMessagesNeverQuoteTheToken) {
  for (AuthResult r : {AuthResult::kMissing, AuthResult::kMalformed, AuthResult::kRejected}) {
    EXPECT_FALSE(AuthFailureMessage(r).empty());
  }
  EXPECT_EQ(AuthFailureMessage(AuthResult::kRejected), "incorrect bearer token");
}

class ResolveAuthTokenTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("KVSERVE_AUTH_TOKEN"); }
  void TearDown() override { unsetenv("KVSERVE_AUTH_TOKEN"); }
};

TEST_F(ResolveAuthTokenTest, FileThenFlagThenEnvironment) {
  const std::string file = WriteFile("client", "# mine\n\n  from-file \nsecond\n");
  setenv("KVSERVE_AUTH_TOKEN", "from-env", 1);
  EXPECT_EQ(*ResolveAuthToken(file, ""), "from-file");
  EXPECT_EQ(*ResolveAuthToken("", "from-flag"), "from-flag");
  EXPECT_EQ(*ResolveAuthToken("", ""), "from-env");
  unsetenv("KVSERVE_AUTH_TOKEN");
  EXPECT_EQ(*ResolveAuthToken("", ""), "");
}

TEST_F(ResolveAuthTokenTest, ClearErrors) {
  EXPECT_EQ(ResolveAuthToken("f", "t").status().message(),
            "give one of --auth_token_file and --auth_token");
  EXPECT_EQ(ResolveAuthToken("/nonexistent/t", "").status().message(),
            "--auth_token_file: cannot read /nonexistent/t");
  const std::string empty = WriteFile("client_empty", "# nothing\n");
  EXPECT_EQ(ResolveAuthToken(empty, "").status().message(),
            "--auth_token_file: no token in " + empty);
}

}  // namespace
}  // namespace kvserve
