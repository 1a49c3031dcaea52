// The Java example client of kvserve: unary Generate, GenerateStream printing
// text as it arrives, Chat, a per-call deadline, cancelling a stream mid-way,
// a bearer token and TLS. The stubs come from proto/kvserve/v1/inference.proto,
// generated at build time (client/java/CMakeLists.txt) against Debian's jars.
//
//   java -cp ... kvserve.example.KvserveExample [--flag=value ...] generate|stream|chat|cancel
//
// Every command prints the text, then one summary line:
//   token_ids=1,2,3 finish=FINISH_REASON_LENGTH prompt_tokens=4 completion_tokens=3
// A failed call prints "error: CODE: the server's message" to stderr and exits 1.
package kvserve.example;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import kvserve.v1.ChatMessage;
import kvserve.v1.ChatRequest;
import kvserve.v1.FinishReason;
import kvserve.v1.GenerateRequest;
import kvserve.v1.GenerateResponse;
import kvserve.v1.InferenceGrpc;
import kvserve.v1.SamplingParams;
import kvserve.v1.StoppingCriteria;
import kvserve.v1.TokenIds;

public final class KvserveExample {
  private final Flags flags;
  private final InferenceGrpc.InferenceBlockingStub stub;

  private KvserveExample(Flags flags, InferenceGrpc.InferenceBlockingStub stub) {
    this.flags = flags;
    this.stub = stub;
  }

  public static void main(String[] args) throws Exception {
    Flags flags;
    try {
      flags = Flags.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.err.println(Flags.USAGE);
      System.exit(2);
      return;
    }
    ManagedChannel channel = Connection.open(flags);
    try {
      InferenceGrpc.InferenceBlockingStub stub = InferenceGrpc.newBlockingStub(channel);
      if (flags.callCredentials != null) {
        stub = stub.withCallCredentials(flags.callCredentials);
      }
      new KvserveExample(flags, stub).run(flags.command);
    } catch (StatusRuntimeException e) {
      System.exit(Errors.report(e));
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** The stub for one call: every call gets a deadline, so a stuck server cannot hang us. */
  private InferenceGrpc.InferenceBlockingStub call() {
    return stub.withDeadlineAfter(flags.deadlineMs, TimeUnit.MILLISECONDS);
  }

  private void run(String command) {
    switch (command) {
      case "generate": {
        GenerateResponse reply = call().generate(request());
        System.out.println(reply.getText());
        printSummary(reply.getTokenIdsList(), reply);
        break;
      }
      case "stream":
        printStream(call().generateStream(request()));
        break;
      case "chat":
        printStream(call().chatStream(chatRequest()));
        break;
      case "cancel":
        streamThenCancel();
        break;
      default:
        throw new AssertionError(command); // Flags.parse checked it
    }
  }

  private GenerateRequest request() {
    GenerateRequest.Builder request =
        GenerateRequest.newBuilder()
            // Temperature 0 (greedy): the same prompt gives the same tokens, unary or streamed.
            .setSampling(SamplingParams.newBuilder().setTemperature(0))
            .setStopping(
                StoppingCriteria.newBuilder()
                    .setMaxNewTokens(flags.maxTokens)
                    .setIgnoreEos(flags.ignoreEos));
    if (flags.promptIds.isEmpty()) {
      request.setText(flags.prompt);
    } else {
      request.setTokenIds(TokenIds.newBuilder().addAllIds(flags.promptIds));
    }
    return request.build();
  }

  private ChatRequest chatRequest() {
    return ChatRequest.newBuilder()
        .addMessages(ChatMessage.newBuilder().setRole("system").setContent(flags.system))
        .addMessages(ChatMessage.newBuilder().setRole("user").setContent(flags.prompt))
        .setSampling(SamplingParams.newBuilder().setTemperature(0))
        .setStopping(StoppingCriteria.newBuilder().setMaxNewTokens(flags.maxTokens))
        .build();
  }

  /** Prints each message's text as soon as it arrives. */
  private static void printStream(Iterator<GenerateResponse> messages) {
    List<Integer> ids = new ArrayList<>();
    while (messages.hasNext()) {
      GenerateResponse message = messages.next();
      System.out.print(message.getText());
      System.out.flush();
      ids.addAll(message.getTokenIdsList());
      if (message.getFinishReason() != FinishReason.FINISH_REASON_UNSPECIFIED) {
        System.out.println();
        printSummary(ids, message);
      }
    }
  }

  /**
   * Reads a few tokens and cancels the call: the server stops generating and frees the request's
   * KV cache blocks. A blocking stream is cancelled through the gRPC Context it was started in.
   */
  private void streamThenCancel() {
    Context.CancellableContext context = Context.current().withCancellation();
    int received = 0;
    try {
      Iterator<GenerateResponse> messages;
      Context previous = context.attach(); // the call started now belongs to `context`
      try {
        messages = call().generateStream(request());
      } finally {
        context.detach(previous);
      }
      while (received < flags.cancelAfter) {
        if (!messages.hasNext()) {
          throw new IllegalStateException("the stream finished before --cancel-after tokens");
        }
        GenerateResponse message = messages.next();
        System.out.print(message.getText());
        received += message.getTokenIdsCount();
      }
    } finally {
      context.cancel(null);
    }
    System.out.printf("%ncancelled after %d tokens (CANCELLED)%n", received);
  }

  private static void printSummary(List<Integer> ids, GenerateResponse last) {
    System.out.printf(
        "token_ids=%s finish=%s prompt_tokens=%d completion_tokens=%d%n",
        ids.stream().map(String::valueOf).collect(Collectors.joining(",")),
        last.getFinishReason(),
        last.getUsage().getPromptTokens(),
        last.getUsage().getCompletionTokens());
  }
}
