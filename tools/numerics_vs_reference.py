#!/usr/bin/env python3
"""How far kvserve's and llama.cpp's logits are from the exact forward of the
same GGUF file, teacher-forced on the same tokens: the measurement behind
"agrees with llama.cpp" (docs/quantized_weights.md, "Numerics").

Both engines round activations to int8 blocks before their integer dot
products; the rounding is a step function, so two correct implementations
that sum in different orders round a few values differently, and after a few
layers their rounding noise is independent. Free-running greedy texts then
part wherever the noise outgrows a top-2 margin. Whether kvserve is as
accurate as llama.cpp is what this measures, against a reference neither
shares code with: the float64 NumPy forward (tests/reference/llama_gguf_numpy.py)
over the weights as gguf-py dequantizes them, without activation rounding.

For each chat prompt, llama.cpp's greedy tokens fix the sequence. At each of
its steps, every engine's top-2 margin over the exact reference's top-2
tokens (a, b) is compared with the reference's own margin. Rows:
  - kvserve (the server at --target; a second one at --target_exact, e.g.
    --cpu_activations=float32, adds a row),
  - llama.cpp with its KV cache in float32 and in float16 (its default),
  - llama.cpp with the prompt evaluated one token at a time (n_batch 1),
  - the NumPy forward that rounds activations as ggml does, in float64.
Columns: median / 90th percentile / max |margin - exact margin| over all
steps, and how often the engine's argmax is not the reference's.

  tools/numerics-vs-reference.sh BUILD_DIR GGUF   (sets up the Python path)
"""
import argparse
import os
import sys

import grpc
import numpy as np
from kvserve.v1 import inference_pb2, inference_pb2_grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "reference"))
from llama_gguf_numpy import LlamaGgufReference  # noqa: E402

from compare_llamacpp import QUESTIONS, llamacpp_greedy, open_llamacpp  # noqa: E402



def prompt_ids(stub, question):
    render = inference_pb2.ApplyChatTemplateRequest()
    render.messages.add(role="user", content=question)
    return list(stub.ApplyChatTemplate(render, timeout=60).token_ids)


def kvserve_margins(stub, prompt, tokens, pairs):
    """kvserve's l_a - l_b at each step, teacher-forced: one request per step
    (the prefix cache keeps the earlier ones' KV). NaN where a or b is not
    among its 20 most likely tokens."""
    margins = []
    for step, (a, b) in enumerate(pairs):
        request = inference_pb2.GenerateRequest()
        request.token_ids.ids.extend(prompt + tokens[:step])
        request.stopping.max_new_tokens = 1
        request.stopping.ignore_eos = True
        request.sampling.logprobs = 20
        top = {t.token_id: t.logprob for t in stub.Generate(request, timeout=120).logprobs[0].top}
        margins.append(top[a] - top[b] if a in top and b in top else float("nan"))
    return margins


def llamacpp_logits(gguf, threads, prompt, tokens, kv_type, prompt_batch):
    """llama.cpp's logits at each step, evaluating as its generation does:
    the prompt in one batch of prompt_batch, then one token at a time."""
    llm = open_llamacpp(gguf, threads, kv_type, prompt_batch)
    llm.eval(prompt)
    rows = [np.array(llm.scores[llm.n_tokens - 1])]
    for token in tokens[:-1]:
        llm.eval([token])
        rows.append(np.array(llm.scores[llm.n_tokens - 1]))
    return rows


def summarize(name, errors, flips, steps):
    e = np.sort(np.abs(np.asarray(errors, dtype=np.float64)))
    e = e[~np.isnan(e)]
    print(f"| {name} | {np.median(e):.2g} | {e[int(len(e) * 0.9)]:.2g} | {e[-1]:.2g} | "
          f"{flips}/{steps} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--target", required=True, help="kvserve serving --gguf")
    parser.add_argument("--target_exact", help="a second kvserve, e.g. --cpu_activations=float32")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    exact = LlamaGgufReference(args.gguf, round_activations=False)
    rounding = LlamaGgufReference(args.gguf, round_activations=True)
    rows = {}  # name -> (errors, flips)

    def add(name, margins, exact_margins):
        errors, flips = rows.setdefault(name, ([], [0]))
        for m, r in zip(margins, exact_margins):
            errors.append(m - r)
            flips[0] += int(m < 0)  # the engine ranks b above a: its argmax is not a

    targets = {"kvserve": args.target}
    if args.target_exact:
        targets["kvserve --cpu_activations=float32"] = args.target_exact
    stubs = {name: inference_pb2_grpc.InferenceStub(grpc.insecure_channel(t))
             for name, t in targets.items()}
    steps = 0
    for question in QUESTIONS:
        prompt = prompt_ids(stubs["kvserve"], question)
        llm = open_llamacpp(args.gguf, args.threads, "f32", 512)
        tokens = llamacpp_greedy(llm, prompt, args.tokens)[0]
        del llm
        sequence = prompt + tokens
        at = slice(len(prompt) - 1, len(sequence) - 1)  # the rows that predict each step
        reference = exact.forward(sequence, exact.new_cache(), 0)[at]
        pairs = [tuple(int(t) for t in np.argsort(row)[::-1][:2]) for row in reference]
        exact_margins = [row[a] - row[b] for row, (a, b) in zip(reference, pairs)]
        steps += len(pairs)

        def margins_of(logit_rows):
            return [row[a] - row[b] for row, (a, b) in zip(logit_rows, pairs)]

        for name, stub in stubs.items():
            add(name, kvserve_margins(stub, prompt, tokens, pairs), exact_margins)
        for name, kv, batch in [("llama.cpp, KV float32", "f32", 512),
                                ("llama.cpp, KV float16 (its default)", "f16", 512),
                                ("llama.cpp, KV float32, prompt one token at a time", "f32", 1)]:
            add(name, margins_of(llamacpp_logits(args.gguf, args.threads, prompt, tokens, kv, batch)),
                exact_margins)
        add("NumPy float64 rounding activations as ggml",
            margins_of(rounding.forward(sequence, rounding.new_cache(), 0)[at]), exact_margins)
        print(f"{question!r}: {len(prompt)} prompt tokens, {len(pairs)} steps; exact margins median "
              f"{np.median(np.abs(exact_margins)):.3f}, smallest {min(exact_margins):.4f}",
              flush=True)

    print(f"\n{os.path.basename(args.gguf)}: |top-2 margin - the exact forward's| over {steps} "
          f"teacher-forced steps\n")
    print("| engine | median | 90th percentile | max | argmax differs |")
    print("|---|---|---|---|---|")
    for name, (errors, flips) in rows.items():
        summarize(name, errors, flips[0], steps)


if __name__ == "__main__":
    main()
