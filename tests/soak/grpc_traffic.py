"""The soak's gRPC requests, each ending in exactly one terminal status in the
ledger: Generate, GenerateStream (short ones, and long ones that together fill
the KV pool), Chat/ChatStream, a stream cancelled after its first messages, a
deadline that expires mid-generation, malformed requests (INVALID_ARGUMENT)
and a client whose channel closes mid-stream."""
import random
import threading

import grpc

from kvserve.v1 import inference_pb2 as pb
from kvserve.v1 import inference_pb2_grpc as pb_grpc

# Long enough that it cannot finish between the first messages and the
# cancel that follows them, short enough to fit the built-in model's context.
LONG = 1500
FINISH_OUTCOME = {pb.FINISH_REASON_LENGTH: "length", pb.FINISH_REASON_EOS: "eos",
                  pb.FINISH_REASON_STOP: "stop"}
EARLY_CODES = {grpc.StatusCode.CANCELLED: "cancelled",
               grpc.StatusCode.DEADLINE_EXCEEDED: "deadline_exceeded"}
ERROR_CODES = {grpc.StatusCode.INVALID_ARGUMENT: "invalid_argument",
               grpc.StatusCode.NOT_FOUND: "not_found",
               grpc.StatusCode.RESOURCE_EXHAUSTED: "resource_exhausted",
               grpc.StatusCode.UNAVAILABLE: "unavailable"}
TIMEOUT_S = 300  # a bound on any call, so a hung server fails the soak


def prompt(rng):
    return "".join(rng.choice("abcdefghij klmnopqrstuvwxyz") for _ in range(rng.randint(4, 60)))


def sampling(rng):
    if rng.random() < 0.5:
        return pb.SamplingParams(temperature=0.0)
    return pb.SamplingParams(temperature=0.8, top_p=0.95, seed=rng.randint(0, 2**31))


def outcome_of_error(error):
    code = error.code()
    return EARLY_CODES.get(code) or ERROR_CODES.get(code) or "error"


class GrpcTraffic:
    def __init__(self, target, ledger):
        self.target = target
        self.ledger = ledger
        self.channel = grpc.insecure_channel(target)
        self.stub = pb_grpc.InferenceStub(self.channel)

    def close(self):
        self.channel.close()

    def scenarios(self):
        return {"grpc_generate": (10, self.generate), "grpc_stream": (10, self.stream),
                "grpc_chat": (6, self.chat), "grpc_long": (2, self.long),
                "grpc_cancel": (6, self.cancel),
                "grpc_deadline": (5, self.deadline), "grpc_malformed": (6, self.malformed),
                "grpc_disconnect": (3, self.disconnect)}

    def generate(self, rng):
        request = self.ledger.begin("grpc_generate", "grpc")
        try:
            reply = self.stub.Generate(self.generate_request(rng), timeout=TIMEOUT_S)
        except grpc.RpcError as e:
            request.end(e.code().name, outcome_of_error(e), expected=False)
            return
        if reply.finish_reason not in FINISH_OUTCOME:
            request.violation(f"unary reply without a finish reason: {reply.finish_reason}")
        request.end("OK", FINISH_OUTCOME.get(reply.finish_reason, "error"))

    def generate_request(self, rng, max_new_tokens=None, ignore_eos=False):
        return pb.GenerateRequest(
            text=prompt(rng), sampling=sampling(rng),
            stopping=pb.StoppingCriteria(max_new_tokens=max_new_tokens or rng.randint(4, 24),
                                         ignore_eos=ignore_eos))

    def chat_request(self, rng, role="user"):
        return pb.ChatRequest(
            messages=[pb.ChatMessage(role="system", content="Be brief."),
                      pb.ChatMessage(role=role, content=prompt(rng))],
            sampling=sampling(rng),
            stopping=pb.StoppingCriteria(max_new_tokens=rng.randint(4, 24)))

    def read_stream(self, request, call, stop_after=None):
        """Reads a stream to its end; checks that exactly the last message has
        a finish reason. With stop_after, cancels after that many messages."""
        finish = None
        messages = 0
        try:
            for message in call:
                messages += 1
                if finish is not None:
                    request.violation("a message after the one with the finish reason")
                if message.finish_reason != pb.FINISH_REASON_UNSPECIFIED:
                    finish = message.finish_reason
                if stop_after is not None and messages == stop_after and finish is None:
                    call.cancel()
        except grpc.RpcError as e:
            if finish is not None:
                request.violation(f"status {e.code().name} after a finish reason")
            return e
        if finish is None:
            request.violation("a stream that ended OK without a finish reason")
        return finish

    def end_stream(self, request, result, expected_codes):
        if isinstance(result, grpc.RpcError):
            request.end(result.code().name, outcome_of_error(result),
                        expected=result.code() in expected_codes)
        else:
            request.end("OK", FINISH_OUTCOME.get(result, "error"))

    def stream(self, rng):
        request = self.ledger.begin("grpc_stream", "grpc")
        call = self.stub.GenerateStream(self.generate_request(rng), timeout=TIMEOUT_S)
        self.end_stream(request, self.read_stream(request, call), ())

    def long(self, rng):
        """A long stream, read to its end: a few at once fill the KV pool."""
        request = self.ledger.begin("grpc_long", "grpc")
        call = self.stub.GenerateStream(
            self.generate_request(rng, rng.randint(200, 800), ignore_eos=True), timeout=TIMEOUT_S)
        self.end_stream(request, self.read_stream(request, call), ())

    def warm_up(self, rng, streams=3, prompt_tokens=700, new_tokens=600):
        """The largest steps the soak produces, once, before the RSS baseline:
        long prompts (chunked at --max_num_batched_tokens) and more long
        streams than the KV pool holds, so sequences are preempted and
        recomputed. Returns when all of them have ended."""
        def one(seed):
            request = self.ledger.begin("grpc_warmup", "grpc")
            long_prompt = pb.GenerateRequest(
                text="".join(random.Random(seed).choice("abcdefghij ") for _ in range(prompt_tokens)),
                sampling=pb.SamplingParams(temperature=0.0),
                stopping=pb.StoppingCriteria(max_new_tokens=new_tokens, ignore_eos=True))
            call = self.stub.GenerateStream(long_prompt, timeout=TIMEOUT_S)
            self.end_stream(request, self.read_stream(request, call), ())
        threads = [threading.Thread(target=one, args=(rng.random(),)) for _ in range(streams)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def chat(self, rng):
        request = self.ledger.begin("grpc_chat", "grpc")
        if rng.random() < 0.5:
            call = self.stub.ChatStream(self.chat_request(rng), timeout=TIMEOUT_S)
            self.end_stream(request, self.read_stream(request, call), ())
            return
        try:
            reply = self.stub.Chat(self.chat_request(rng), timeout=TIMEOUT_S)
        except grpc.RpcError as e:
            request.end(e.code().name, outcome_of_error(e), expected=False)
            return
        request.end("OK", FINISH_OUTCOME.get(reply.finish_reason, "error"))

    def cancel(self, rng):
        request = self.ledger.begin("grpc_cancel", "grpc")
        call = self.stub.GenerateStream(self.generate_request(rng, LONG, ignore_eos=True),
                                        timeout=TIMEOUT_S)
        result = self.read_stream(request, call, stop_after=rng.randint(1, 3))
        self.end_stream(request, result, (grpc.StatusCode.CANCELLED,))

    def deadline(self, rng):
        request = self.ledger.begin("grpc_deadline", "grpc")
        timeout = rng.uniform(0.05, 0.5)
        long_request = self.generate_request(rng, LONG, ignore_eos=True)
        if rng.random() < 0.5:
            call = self.stub.GenerateStream(long_request, timeout=timeout)
            result = self.read_stream(request, call)
            self.end_stream(request, result, (grpc.StatusCode.DEADLINE_EXCEEDED,))
            return
        try:
            reply = self.stub.Generate(long_request, timeout=timeout)
            request.end("OK", FINISH_OUTCOME.get(reply.finish_reason, "error"))
        except grpc.RpcError as e:
            request.end(e.code().name, outcome_of_error(e),
                        expected=e.code() == grpc.StatusCode.DEADLINE_EXCEEDED)

    def malformed(self, rng):
        """Each bad field must come back INVALID_ARGUMENT, never anything else."""
        request = self.ledger.begin("grpc_malformed", "grpc")
        good = self.generate_request(rng)
        kind = rng.randrange(7)
        if kind == 0:
            good.sampling.temperature = -1.0
        elif kind == 1:
            good.sampling.top_p = 1.5
        elif kind == 2:
            good.stopping.max_new_tokens = 1_000_000
        elif kind == 3:
            good.token_ids.ids.extend([1, 99_999])
        elif kind == 4:
            good.ClearField("text")
        elif kind == 6:
            good.request_id = "x" * 300  # at most 256 bytes
        try:
            if kind == 5:  # a role the chat template refuses
                self.stub.Chat(self.chat_request(rng, role="robot"), timeout=TIMEOUT_S)
            else:
                self.stub.Generate(good, timeout=TIMEOUT_S)
            request.end("OK", "length", expected=False)
        except grpc.RpcError as e:
            request.end(e.code().name, outcome_of_error(e),
                        expected=e.code() == grpc.StatusCode.INVALID_ARGUMENT)

    def disconnect(self, rng):
        """A client that goes away mid-stream: its own channel, closed."""
        request = self.ledger.begin("grpc_disconnect", "grpc")
        channel = grpc.insecure_channel(self.target)
        call = pb_grpc.InferenceStub(channel).GenerateStream(
            self.generate_request(rng, LONG, ignore_eos=True), timeout=TIMEOUT_S)
        try:
            next(call)
            channel.close()
            for _ in call:
                pass
            request.end("OK", "length", expected=False)
        except grpc.RpcError as e:
            request.end(e.code().name, outcome_of_error(e),
                        expected=e.code() == grpc.StatusCode.CANCELLED)
        finally:
            channel.close()
