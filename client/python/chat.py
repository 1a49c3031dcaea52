#!/usr/bin/env python3
"""Chats with a kvserve server: the server renders the conversation with the
model's chat template (ChatStream), and this client keeps the history.

    PYTHONPATH=build/python python3 client/python/chat.py \
        --target localhost:50051 --message "What is the capital of France?"

Without --message, reads one user turn per line from stdin (a terminal or a
pipe) until end of input; "/reset" forgets the conversation. --show-prompt
prints the rendered prompt (ApplyChatTemplate) instead of answering; --json
prints one JSON object per answer.

As a library:

    chat = Chat(stub, system="You are terse.", max_tokens=64)
    for piece in chat.send("Hello"):
        print(piece, end="")
"""
import argparse
import json
import sys
import time

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc
from kvserve_auth import add_auth_arguments, call_metadata


class Chat:
    """A conversation: send() streams the answer and keeps both turns."""

    def __init__(self, stub, system=None, max_tokens=256, temperature=0.0, seed=None,
                 timeout_s=120.0, metadata=()):
        self.stub = stub
        self.metadata = metadata  # per-call metadata: the bearer token, if any
        self.system = system
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.timeout_s = timeout_s
        self.last = None  # the last message of the last answer (finish reason, usage)
        self.reset()

    def reset(self):
        self.history = []
        if self.system:
            self.history.append(inference_pb2.ChatMessage(role="system", content=self.system))

    def request(self, user_text):
        request = inference_pb2.ChatRequest()
        request.messages.extend(self.history)
        request.messages.add(role="user", content=user_text)
        request.sampling.temperature = self.temperature
        if self.seed is not None:
            request.sampling.seed = self.seed
        request.stopping.max_new_tokens = self.max_tokens
        return request

    def send(self, user_text):
        """Yields the answer's text as it streams; the history grows once it ends."""
        request = self.request(user_text)
        pieces = []
        for message in self.stub.ChatStream(request, timeout=self.timeout_s,
                                            metadata=self.metadata):
            pieces.append(message.text)
            self.last = message
            yield message.text
        self.history.append(inference_pb2.ChatMessage(role="user", content=user_text))
        self.history.append(inference_pb2.ChatMessage(role="assistant", content="".join(pieces)))

    def render(self, user_text):
        render = inference_pb2.ApplyChatTemplateRequest()
        render.messages.extend(self.request(user_text).messages)
        return self.stub.ApplyChatTemplate(render, timeout=self.timeout_s,
                                           metadata=self.metadata)


def answer(chat, text, as_json):
    sent = time.monotonic()
    first, pieces = None, []
    if not as_json:
        sys.stdout.write("assistant> ")
    for piece in chat.send(text):
        if first is None:
            first = time.monotonic()
        pieces.append(piece)
        if not as_json:
            sys.stdout.write(piece)
            sys.stdout.flush()
    elapsed = time.monotonic() - sent
    last = chat.last
    summary = {
        "text": "".join(pieces),
        "finish_reason": inference_pb2.FinishReason.Name(last.finish_reason),
        "prompt_tokens": last.usage.prompt_tokens,
        "completion_tokens": last.usage.completion_tokens,
        "ttft_ms": ((first or sent) - sent) * 1000.0,
        "tokens_per_s": last.usage.completion_tokens / elapsed if elapsed > 0 else 0.0,
    }
    if as_json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(f"\n({summary['completion_tokens']} tokens, {summary['tokens_per_s']:.1f} tokens/s, "
              f"finish: {summary['finish_reason']})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--message", help="one message (default: read turns from stdin)")
    parser.add_argument("--system", help="a system message")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument("--show-prompt", action="store_true",
                        help="print the rendered prompt and its token ids, do not answer")
    parser.add_argument("--json", action="store_true")
    add_auth_arguments(parser)
    args = parser.parse_args()

    with grpc.insecure_channel(args.target) as channel:
        chat = Chat(inference_pb2_grpc.InferenceStub(channel), system=args.system,
                    max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                    timeout_s=args.timeout_s, metadata=call_metadata(args))
        try:
            if args.show_prompt:
                rendered = chat.render(args.message or "")
                if args.json:
                    print(json.dumps({"text": rendered.text, "token_ids": list(rendered.token_ids)},
                                     ensure_ascii=False))
                else:
                    print(rendered.text)
                return 0
            if args.message is not None:
                answer(chat, args.message, args.json)
                return 0
            for line in sys.stdin:
                text = line.strip()
                if not text:
                    continue
                if text == "/reset":
                    chat.reset()
                    continue
                if not args.json:
                    print(f"you> {text}")
                answer(chat, text, args.json)
        except grpc.RpcError as error:
            print(f"\nerror: {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
