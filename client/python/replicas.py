"""An Inference stub over several kvserve replicas (docs/routing.md), for the
Python examples: `--target host1:50051,host2:50051`.

Calls go round-robin over the targets (this client is single-threaded, so
"fewest in flight", as in the C++ client, would always pick an idle one:
round-robin spreads the same way). A call that fails with UNAVAILABLE before
any message arrived moves on to the next target, each target tried at most
once; a stream that already yielded a message is never resent, so nothing is
served twice.

    stub = ReplicaStub("127.0.0.1:50051,127.0.0.1:50052")
    for message in stub.GenerateStream(request, timeout=60):
        ...
    print(stub.last_target)  # the replica that answered
"""
import grpc
from kvserve.v1 import inference_pb2_grpc

_UNARY = ("Generate", "Chat", "ApplyChatTemplate", "GetModelInfo", "Tokenize", "Detokenize")
_STREAMS = ("GenerateStream", "ChatStream")


def parse_targets(text):
    targets = [t.strip() for t in text.split(",")]
    if not targets or any(not t for t in targets):
        raise ValueError(f'--target "{text}": expected HOST:PORT[,HOST:PORT...] with no empty entry')
    return targets


class ReplicaStub:
    def __init__(self, targets):
        self.targets = parse_targets(targets)
        self.channels = [grpc.insecure_channel(t) for t in self.targets]
        self.stubs = [inference_pb2_grpc.InferenceStub(c) for c in self.channels]
        self.next = 0
        self.last_target = None
        for name in _UNARY:
            setattr(self, name, self._unary(name))
        for name in _STREAMS:
            setattr(self, name, self._stream(name))

    def close(self):
        for channel in self.channels:
            channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _order(self):
        """Every target once, starting one further each call."""
        start = self.next % len(self.stubs)
        self.next += 1
        return [(self.targets[i % len(self.stubs)], self.stubs[i % len(self.stubs)])
                for i in range(start, start + len(self.stubs))]

    def _unary(self, name):
        def call(request, **kwargs):
            order = self._order()
            for i, (target, stub) in enumerate(order):
                self.last_target = target
                try:
                    return getattr(stub, name)(request, **kwargs)
                except grpc.RpcError as error:
                    if error.code() != grpc.StatusCode.UNAVAILABLE or i + 1 == len(order):
                        raise
        return call

    def _stream(self, name):
        def call(request, **kwargs):
            order = self._order()
            for i, (target, stub) in enumerate(order):
                self.last_target = target
                received = False
                try:
                    for message in getattr(stub, name)(request, **kwargs):
                        received = True
                        yield message
                    return
                except grpc.RpcError as error:
                    # After a message, the error is the answer: resending
                    # would serve the request twice.
                    if received or error.code() != grpc.StatusCode.UNAVAILABLE or i + 1 == len(order):
                        raise
        return call
