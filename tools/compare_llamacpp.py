#!/usr/bin/env python3
"""llama.cpp vs kvserve on one GGUF file: the same prompt token ids (rendered
by kvserve's ApplyChatTemplate), greedy decoding, one sequence at a time.
Prints how many greedy tokens agree, llama.cpp's top-2 logit margin where
they first differ (issue 25's criterion: equal for --tokens tokens, or up to
the first step whose margin is under 0.05), how far the two engines' margins
are apart where they agree, and each engine's decode tokens/s. With
--candidate_kv, llama.cpp is compared with itself in another configuration:
what the criterion gives for two correct engines (docs/quantized_weights.md,
"Numerics"; tools/numerics_vs_reference.py measures both against the exact
forward). Run through tools/compare-llamacpp.sh."""
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
    request.sampling.logprobs = 2  # each step's top-2: its margin (log-softmax keeps logit gaps)
    first, tokens, margins = None, [], []
    start = time.perf_counter()
    for message in stub.GenerateStream(request, timeout=600):
        if first is None and message.token_ids:
            first = time.perf_counter()
        tokens.extend(message.token_ids)
        margins.extend(step.top[0].logprob - step.top[1].logprob for step in message.logprobs)
    done = time.perf_counter()
    return tokens, (len(tokens) - 1) / (done - first), first - start, margins


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


def open_llamacpp(gguf, threads, kv, prompt_batch):
    kv_type = {"f16": 1, "f32": 0}[kv]  # GGML_TYPE_F16, GGML_TYPE_F32
    return Llama(model_path=gguf, n_ctx=1024, n_threads=threads, n_batch=prompt_batch,
                 n_ubatch=prompt_batch, type_k=kv_type, type_v=kv_type,
                 logits_all=True, verbose=False)  # scores of every evaluated token: the margins


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--llamacpp_kv", choices=["f16", "f32"], default="f16",
                        help="llama.cpp's KV cache type (its default f16; kvserve's CPU "
                             "cache is float32, so f32 compares the weights' numerics alone)")
    parser.add_argument("--llamacpp_prompt_batch", type=int, default=512,
                        help="llama.cpp's n_batch and n_ubatch: 1 evaluates the prompt one "
                             "token at a time, through the same kernels as its decode steps")
    parser.add_argument("--candidate_kv", choices=["f16", "f32"],
                        help="compare llama.cpp with itself: the candidate is llama.cpp with "
                             "this KV cache type (and --candidate_prompt_batch) instead of "
                             "kvserve, which then only renders the prompts. What the criterion "
                             "gives for two correct engines")
    parser.add_argument("--candidate_prompt_batch", type=int, default=512)
    args = parser.parse_args()

    llm = open_llamacpp(args.gguf, args.threads, args.llamacpp_kv, args.llamacpp_prompt_batch)
    with grpc.insecure_channel(args.target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        if args.candidate_kv:
            name = f"llama.cpp KV {args.candidate_kv} prompt batch {args.candidate_prompt_batch}"
            other = open_llamacpp(args.gguf, args.threads, args.candidate_kv,
                                  args.candidate_prompt_batch)
            candidate = lambda ids: llamacpp_greedy(other, ids, args.tokens)  # noqa: E731
        else:
            name = "kvserve"
            candidate = lambda ids: kvserve_greedy(stub, ids, args.tokens)  # noqa: E731
        total_same, total, agree_by_criterion = 0, 0, 0
        speeds = {name: [], "llama.cpp": []}
        margin_gaps = []
        for question in QUESTIONS:
            render = inference_pb2.ApplyChatTemplateRequest()
            render.messages.add(role="user", content=question)
            ids = list(stub.ApplyChatTemplate(render, timeout=60).token_ids)
            ours, our_speed, our_ttft, our_margins = candidate(ids)
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
            speeds[name].append(our_speed)
            speeds["llama.cpp"].append(their_speed)
            print(f"{question!r}: {len(ids)} prompt tokens; first {same}/{args.tokens} greedy tokens "
                  f"identical ({verdict}); decode {name} {our_speed:.1f} tok/s, llama.cpp "
                  f"{their_speed:.1f} tok/s; prefill+first token {name} {our_ttft * 1000:.0f} ms, "
                  f"llama.cpp {their_ttft * 1000:.0f} ms")
            # How far apart the two engines' logits are, along the tokens both chose: the
            # difference of their top-2 margins at each step up to the first parting (there
            # the margins' signs differ).
            gaps = sorted(abs(our_margins[k] - margins[k]) for k in range(same))
            if gaps:
                print(f"  |margin difference| over the {same} shared steps: median "
                      f"{gaps[len(gaps) // 2]:.4f}, max {gaps[-1]:.4f}")
                margin_gaps.extend(gaps)
            print(f"  {name}:", repr(llm.detokenize(ours).decode("utf-8", "replace")))
            print("  llama.cpp:", repr(llm.detokenize(theirs).decode("utf-8", "replace")))
        if margin_gaps:
            margin_gaps.sort()
            print(f"margin difference {name} - llama.cpp over all shared steps: median "
                  f"{margin_gaps[len(margin_gaps) // 2]:.4f}, 90th percentile "
                  f"{margin_gaps[len(margin_gaps) * 9 // 10]:.4f}, max {margin_gaps[-1]:.4f}")
        k = sum(speeds[name]) / len(QUESTIONS)
        l = sum(speeds["llama.cpp"]) / len(QUESTIONS)
        print(f"summary: {total_same}/{total} greedy tokens identical (prefix agreement); "
              f"{agree_by_criterion}/{len(QUESTIONS)} prompts agree up to the first margin under 0.05; "
              f"decode {name} {k:.1f} tok/s vs llama.cpp {l:.1f} tok/s: ratio {k / l:.2f} "
              f"({args.threads} threads, batch 1; llama.cpp KV cache {args.llamacpp_kv}, prompt "
              f"batch {args.llamacpp_prompt_batch})")


if __name__ == "__main__":
    main()
