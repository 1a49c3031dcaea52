#!/usr/bin/env python3
"""llama.cpp vs kvserve on one GGUF file: the same prompt token ids (rendered
by kvserve's ApplyChatTemplate), greedy decoding, one sequence at a time.
Prints how many greedy tokens agree, llama.cpp's top-2 logit margin where
they first differ (issue 25's criterion: equal for --tokens tokens, or up to
the first step whose margin is under 0.05), and each engine's decode
tokens/s. Run through tools/compare-llamacpp.sh."""
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
    """Greedy tokens, decode tokens/s, time to the first token, and each
    step's top-2 logit margin."""
    import numpy as np
    llm.reset()
    tokens, margins, first = [], [], None
    start = time.perf_counter()
    llm.eval(ids)
    while len(tokens) < n:
        logits = np.asarray(llm.scores[llm.n_tokens - 1])
        top2 = np.argpartition(logits, -2)[-2:]
        best, second = (top2[1], top2[0]) if logits[top2[1]] >= logits[top2[0]] else (top2[0], top2[1])
        margins.append(float(logits[best] - logits[second]))
        tokens.append(int(best))
        if first is None:
            first = time.perf_counter()
        if len(tokens) < n:
            llm.eval([int(best)])
    done = time.perf_counter()
    return tokens, (len(tokens) - 1) / (done - first), first - start, margins


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--llamacpp_kv", choices=["f16", "f32"], default="f16",
                        help="llama.cpp's KV cache type (its default f16; kvserve's CPU "
                             "cache is float32, so f32 compares the weights' numerics alone)")
    args = parser.parse_args()

    kv_type = {"f16": 1, "f32": 0}[args.llamacpp_kv]  # GGML_TYPE_F16, GGML_TYPE_F32
    llm = Llama(model_path=args.gguf, n_ctx=1024, n_threads=args.threads, n_batch=512,
                type_k=kv_type, type_v=kv_type,
                logits_all=True, verbose=False)  # scores of every evaluated token: the margins
    with grpc.insecure_channel(args.target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        total_same, total, agree_by_criterion = 0, 0, 0
        speeds = {"kvserve": [], "llama.cpp": []}
        for question in QUESTIONS:
            render = inference_pb2.ApplyChatTemplateRequest()
            render.messages.add(role="user", content=question)
            ids = list(stub.ApplyChatTemplate(render, timeout=60).token_ids)
            ours, our_speed, our_ttft = kvserve_greedy(stub, ids, args.tokens)
            theirs, their_speed, their_ttft, margins = llamacpp_greedy(llm, ids, args.tokens)
            same = next((k for k in range(args.tokens) if ours[k] != theirs[k]), args.tokens)
            close = next((k for k in range(args.tokens) if margins[k] < 0.05), args.tokens)
            verdict = ("all equal" if same == args.tokens else
                       f"part at step {same}, llama.cpp's margin there {margins[same]:.3f}" +
                       (" (a close call: agrees)" if same >= close else
                        f" (first margin under 0.05 at step {close}: DISAGREES before it)"))
            agree_by_criterion += int(same >= close)
            total_same += same
            total += args.tokens
            speeds["kvserve"].append(our_speed)
            speeds["llama.cpp"].append(their_speed)
            print(f"{question!r}: {len(ids)} prompt tokens; first {same}/{args.tokens} greedy tokens "
                  f"identical ({verdict}); decode kvserve {our_speed:.1f} tok/s, llama.cpp {their_speed:.1f} "
                  f"tok/s; prefill+first token kvserve {our_ttft * 1000:.0f} ms, llama.cpp "
                  f"{their_ttft * 1000:.0f} ms")
            print("  kvserve:  ", repr(llm.detokenize(ours).decode("utf-8", "replace")))
            print("  llama.cpp:", repr(llm.detokenize(theirs).decode("utf-8", "replace")))
        k = sum(speeds["kvserve"]) / len(QUESTIONS)
        l = sum(speeds["llama.cpp"]) / len(QUESTIONS)
        print(f"summary: {total_same}/{total} greedy tokens identical (prefix agreement); "
              f"{agree_by_criterion}/{len(QUESTIONS)} prompts agree up to the first margin under 0.05; "
              f"decode kvserve {k:.1f} tok/s vs llama.cpp {l:.1f} tok/s: ratio {k / l:.2f} "
              f"({args.threads} threads, batch 1; llama.cpp KV cache {args.llamacpp_kv})")


if __name__ == "__main__":
    main()
