#!/usr/bin/env python3
"""llama-batched-bench's measurement loop over llama-cpp-python's libllama
(built from the same sdist by pip), for deploy/cpu-peer-bench.sh when
LLAMACPP_VENV names a venv with llama_cpp instead of a built
llama-batched-bench. For each batch size pl: pl random prompts of pp tokens
decoded together (prefill), then tg steps of one token per sequence; prints
one JSON line per pl with batched-bench's field names (pl, speed_pp,
speed_tg). The Python between llama_decode calls is a few microseconds per
step next to steps of tens of milliseconds.

    llamacpp_batched_bench.py -m F.gguf -c CTX -t THREADS -npp 32 -ntg 16 -npl 1,8,32
"""
import argparse
import random
import time

import llama_cpp as L


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-m", required=True)
    p.add_argument("-c", type=int, required=True)
    p.add_argument("-t", type=int, default=2)
    p.add_argument("-npp", type=int, required=True)
    p.add_argument("-ntg", type=int, required=True)
    p.add_argument("-npl", required=True)
    a = p.parse_args()
    pls = [int(x) for x in a.npl.split(",")]
    L.llama_backend_init()
    model = L.llama_model_load_from_file(a.m.encode(), L.llama_model_default_params())
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = a.c, 2048, 512
    cp.n_threads = cp.n_threads_batch = a.t
    cp.n_seq_max = max(pls)
    ctx = L.llama_init_from_model(model, cp)
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    batch = L.llama_batch_init(max(2048, max(pls)), 0, max(pls))
    rng = random.Random(1)

    def decode(items):  # [(token, pos, seq, logits)], in chunks of n_batch
        for start in range(0, len(items), 2048):
            chunk = items[start:start + 2048]
            for i, (tok, pos, seq, want) in enumerate(chunk):
                batch.token[i], batch.pos[i] = tok, pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = want
            batch.n_tokens = len(chunk)
            if L.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
        L.llama_synchronize(ctx)

    mem = L.llama_get_memory(ctx)
    for pl in pls:
        L.llama_memory_clear(mem, False)
        prompt = [(rng.randrange(n_vocab), i, j, i == a.npp - 1) for j in range(pl)
                  for i in range(a.npp)]
        start = time.perf_counter()
        decode(prompt)
        t_pp = time.perf_counter() - start
        start = time.perf_counter()
        for i in range(a.ntg):
            decode([(rng.randrange(n_vocab), a.npp + i, j, True) for j in range(pl)])
        t_tg = time.perf_counter() - start
        print(f'{{"pl": {pl}, "pp": {a.npp}, "tg": {a.ntg}, "speed_pp": {pl * a.npp / t_pp}, '
              f'"speed_tg": {pl * a.ntg / t_tg}, "t_pp": {t_pp}, "t_tg": {t_tg}}}', flush=True)
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)


if __name__ == "__main__":
    main()
