#!/usr/bin/env python3
"""Golden references from Hugging Face transformers for the checkpoints that
kvserve-mkmodel writes (the config variants: llama3 RoPE scaling with tied
embeddings and an EOS list, Qwen2 qkv bias, Mistral with linear RoPE
scaling), in the format of tests/data/*/golden.json (see FIXTURES.md).

Run once, by hand, where torch and transformers are installed (never in CI,
never at serving time):

    build/tools/kvserve-mkmodel --preset tiny-qwen2 --dtype float32 --shard_size_mb 0 \
        --out tests/data/tiny-qwen2
    python3 tests/tools/make_variant_golden.py tests/data/tiny-qwen2

Unlike make_golden.py of the original fixtures, generate() gets an explicit
all-ones attention mask, so no prompt token is ever taken for padding.
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main(model_dir, seed=7):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(seed + 1)
    prompts = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (1, 5, 17, 64, 130)]
    cases = []
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p])
            logits = model(ids).logits[0]
            gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24,
                                 min_new_tokens=24, do_sample=False, pad_token_id=0, eos_token_id=None)
            new = gen[0, len(p):].tolist()
            full = model(torch.tensor([gen[0].tolist()])).logits[0]
            margins = []
            for t in range(len(p) - 1, gen.shape[1] - 1):
                top = torch.topk(full[t], 2).values
                margins.append(float(top[0] - top[1]))
            cases.append({"prompt": p, "greedy": new, "greedy_margins": margins,
                          "last_logits": logits[-1].tolist(),
                          "logits_sum_per_pos": logits.sum(-1).tolist()})
    with open(f"{model_dir}/golden.json", "w") as f:
        json.dump({"transformers_model": type(model).__name__, "dtype": "float32",
                   "transformers_version": __import__("transformers").__version__,
                   "cases": cases}, f)
    print(model_dir, type(model).__name__, "min margin",
          min(min(c["greedy_margins"]) for c in cases))


if __name__ == "__main__":
    main(sys.argv[1])
