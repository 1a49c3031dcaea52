#!/usr/bin/env python3
"""llama.cpp vs kvserve on one GGUF file: the same prompt token ids (rendered
by kvserve's ApplyChatTemplate), greedy decoding, one sequence at a time.
Prints how many greedy tokens agree and each engine's decode tokens/s.
Run through tools/compare-llamacpp.sh."""
import argparse
import os
import time

import grpc
from kvserve.v1 import inference_pb2, inference_pb2_grpc
from llama_cpp import Llama

QUESTIONS = ["What is the capital of France?",
             "Write a haiku about the sea.",
             "Explain what a CPU cache is in two sentences."]


def kvserve_greedy(stub, ids, n):
    request = inference_pb2.GenerateRequest()
    request.token_ids.ids.extend(ids)
    request.stopping.max_new_tokens = n
    request.stopping.ignore_eos = True
    first, tokens = None, []
    start = time.perf_counter()
    for message in stub.GenerateStream(request, timeout=600):
        if first is None and message.token_ids:
            first = time.perf_counter()
        tokens.extend(message.token_ids)
    done = time.perf_counter()
    return tokens, (len(tokens) - 1) / (done - first), first - start


def llamacpp_greedy(llm, ids, n):
    llm.reset()
    tokens, first = [], None
    start = time.perf_counter()
    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0, reset=True):
        if first is None:
            first = time.perf_counter()
        tokens.append(token)
        if len(tokens) == n:
            break
    done = time.perf_counter()
    return tokens, (len(tokens) - 1) / (done - first), first - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    llm = Llama(model_path=args.gguf, n_ctx=1024, n_threads=args.threads, n_batch=512,
                logits_all=False, verbose=False)
    with grpc.insecure_channel(args.target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        total_same, total = 0, 0
        speeds = {"kvserve": [], "llama.cpp": []}
        for question in QUESTIONS:
            render = inference_pb2.ApplyChatTemplateRequest()
            render.messages.add(role="user", content=question)
            ids = list(stub.ApplyChatTemplate(render, timeout=60).token_ids)
            ours, our_speed, our_ttft = kvserve_greedy(stub, ids, args.tokens)
            theirs, their_speed, their_ttft = llamacpp_greedy(llm, ids, args.tokens)
            same = next((k for k in range(args.tokens) if ours[k] != theirs[k]), args.tokens)
            total_same += same
            total += args.tokens
            speeds["kvserve"].append(our_speed)
            speeds["llama.cpp"].append(their_speed)
            print(f"{question!r}: {len(ids)} prompt tokens; first {same}/{args.tokens} greedy tokens "
                  f"identical; decode kvserve {our_speed:.1f} tok/s, llama.cpp {their_speed:.1f} "
                  f"tok/s; prefill+first token kvserve {our_ttft * 1000:.0f} ms, llama.cpp "
                  f"{their_ttft * 1000:.0f} ms")
            print("  kvserve:  ", repr(llm.detokenize(ours).decode("utf-8", "replace")))
            print("  llama.cpp:", repr(llm.detokenize(theirs).decode("utf-8", "replace")))
        k = sum(speeds["kvserve"]) / len(QUESTIONS)
        l = sum(speeds["llama.cpp"]) / len(QUESTIONS)
        print(f"summary: {total_same}/{total} greedy tokens identical (prefix agreement); "
              f"decode kvserve {k:.1f} tok/s vs llama.cpp {l:.1f} tok/s: ratio {k / l:.2f} "
              f"({args.threads} threads, batch 1)")


if __name__ == "__main__":
    main()
