package kvserve.example;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Map;

/** What a client usually does about the codes kvserve returns (docs/errors.md). */
final class Errors {
  private static final Map<Status.Code, String> HINTS =
      Map.of(
          Status.Code.INVALID_ARGUMENT,
              "the request is wrong: fix the field the message names; retrying will not help",
          Status.Code.RESOURCE_EXHAUSTED,
              "the server is full (queue or KV cache): retry later, with backoff",
          Status.Code.UNAVAILABLE,
              "the server is down, starting or draining: retry, or try another replica",
          Status.Code.DEADLINE_EXCEEDED,
              "the deadline passed first: raise it or ask for fewer tokens",
          Status.Code.UNAUTHENTICATED, "send the server's bearer token (--auth-token-file)");

  private Errors() {}

  /** Prints "error: CODE: message" and a hint; returns the exit code. */
  static int report(StatusRuntimeException e) {
    Status status = e.getStatus();
    String description = status.getDescription() == null ? "" : status.getDescription();
    System.err.printf("error: %s: %s%n", status.getCode(), description);
    String hint = HINTS.get(status.getCode());
    if (hint != null) System.err.println("hint: " + hint);
    return 1;
  }
}
