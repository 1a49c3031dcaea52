#!/usr/bin/env python3
"""Streams a completion from a kvserve server, using stubs generated from
proto/kvserve/v1/inference.proto by protoc and grpc_python_plugin (the build
writes them to build/python; put that directory on PYTHONPATH).

    PYTHONPATH=build/python python3 client/python/generate.py \
        --target localhost:50051 --prompt "Hello" --max-tokens 32 \
        [--auth-token-file FILE]

Prints the text as it arrives (or the token ids, for --prompt-ids), then a
summary line; --json prints one JSON object instead.
"""
import argparse
import json
import sys
import time

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc
from kvserve_auth import add_auth_arguments, call_metadata


def build_request(args):
    request = inference_pb2.GenerateRequest()
    if args.prompt is not None:
        request.text = args.prompt
    else:
        request.token_ids.ids.extend(int(x) for x in args.prompt_ids.split(","))
    request.sampling.temperature = args.temperature
    if args.seed is not None:
        request.sampling.seed = args.seed
    # Optional fields are set only when given, so the server's defaults apply.
    for name in ("top_k", "top_p", "repetition_penalty", "presence_penalty",
                 "frequency_penalty", "min_p", "logprobs"):
        value = getattr(args, name)
        if value is not None:
            setattr(request.sampling, name, value)
    request.sampling.min_new_tokens = args.min_tokens
    request.stopping.max_new_tokens = args.max_tokens
    request.stopping.ignore_eos = args.ignore_eos
    return request


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prompt", help="prompt text (the model needs a tokenizer)")
    group.add_argument("--prompt-ids", help="comma-separated token ids")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--top-k", type=int)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--repetition-penalty", type=float, help="> 0, 1 = off")
    parser.add_argument("--presence-penalty", type=float, help="in [-2, 2]")
    parser.add_argument("--frequency-penalty", type=float, help="in [-2, 2]")
    parser.add_argument("--min-p", type=float, help="in [0, 1]")
    parser.add_argument("--min-tokens", type=int, default=0,
                        help="no EOS or stop token id before this many new tokens")
    parser.add_argument("--logprobs", type=int,
                        help="report each token's log-probability and N alternatives (0..20)")
    parser.add_argument("--ignore-eos", action="store_true")
    parser.add_argument("--unary", action="store_true", help="use Generate instead of GenerateStream")
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    add_auth_arguments(parser)
    args = parser.parse_args()
    metadata = call_metadata(args)

    with grpc.insecure_channel(args.target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        request = build_request(args)
        sent = time.monotonic()
        first = None
        token_ids, text, logprobs, last = [], [], [], None
        request_id = ""  # a stream carries it in its first message only
        try:
            if args.unary:
                last = stub.Generate(request, timeout=args.timeout_s, metadata=metadata)
                first = time.monotonic()
                request_id = last.request_id
                token_ids.extend(last.token_ids)
                text.append(last.text)
                logprobs.extend(last.logprobs)
            else:
                for message in stub.GenerateStream(request, timeout=args.timeout_s,
                                                   metadata=metadata):
                    if first is None:
                        first = time.monotonic()
                        request_id = message.request_id
                    token_ids.extend(message.token_ids)
                    text.append(message.text)
                    logprobs.extend(message.logprobs)
                    if not args.json:
                        if message.text:
                            sys.stdout.write(message.text)
                        elif args.prompt_ids:
                            sys.stdout.write(" ".join(map(str, message.token_ids)) + " ")
                        sys.stdout.flush()
                    last = message
        except grpc.RpcError as error:
            print(f"\nerror: {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
        done = time.monotonic()

    reason = inference_pb2.FinishReason.Name(last.finish_reason)
    elapsed = done - sent
    summary = {
        "request_id": request_id,
        "token_ids": token_ids,
        "text": "".join(text),
        "finish_reason": reason,
        "prompt_tokens": last.usage.prompt_tokens,
        "completion_tokens": last.usage.completion_tokens,
        "ttft_ms": (first - sent) * 1000.0,
        "tokens_per_s": len(token_ids) / elapsed if elapsed > 0 else 0.0,
    }
    if args.logprobs is not None:
        summary["logprobs"] = [
            {"token_id": l.token_id, "logprob": l.logprob,
             "top": [{"token_id": t.token_id, "logprob": t.logprob} for t in l.top]}
            for l in logprobs]
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"\n--\nttft {summary['ttft_ms']:.1f} ms | {len(token_ids)} tokens | "
              f"{summary['tokens_per_s']:.1f} tokens/s | finish: {reason}")
        for entry in summary.get("logprobs", []):
            alternatives = " ".join(f"{t['token_id']}:{t['logprob']:.4f}" for t in entry["top"])
            print(f"{entry['token_id']} {entry['logprob']:.4f} | {alternatives}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
