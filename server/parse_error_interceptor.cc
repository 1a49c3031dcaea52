#include "server/parse_error_interceptor.h"

#include <google/protobuf/descriptor.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server/library_logs.h"

namespace kvserve {
namespace {

using grpc::experimental::InterceptionHookPoints;

// "/kvserve.v1.Inference/Generate" → "kvserve.v1.GenerateRequest".
std::string RequestTypeName(const char* method) {
  std::string name = absl::StrReplaceAll(method[0] == '/' ? method + 1 : method, {{"/", "."}});
  const google::protobuf::MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(name);
  return descriptor != nullptr ? descriptor->input_type()->full_name() : "request";
}

class ParseErrorInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ParseErrorInterceptor(grpc::experimental::ServerRpcInfo* info) : info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      // Deserialized just before, on this thread: protobuf's reason, if it logged one.
      parse_failed_ = true;
      reason_ = TakeLastParseErrorOnThisThread();
    }
    if (parse_failed_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("the request body is not a valid ", RequestTypeName(info_->method()),
                         " message: ",
                         reason_.empty() ? "its bytes do not parse as protobuf, or a string "
                                           "field holds invalid UTF-8"
                                         : reason_)));
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  bool parse_failed_ = false;
  std::string reason_;
};

class ParseErrorInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Only these receive their one request before the handler runs; in the
    // streaming-request kinds, no message after a read is the stream's end.
    if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY &&
        info->type() != grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING) {
      return nullptr;
    }
    return new ParseErrorInterceptor(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeParseErrorInterceptorFactory() {
  return std::make_unique<ParseErrorInterceptorFactory>();
}

}  // namespace kvserve
