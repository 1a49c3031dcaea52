#!/usr/bin/env python3
"""Writes a Llama GGUF file with random weights in one storage type (F32,
BF16 or Q8_0) and a small SentencePiece-style vocabulary, for comparing
engines on the same weights (deploy/cpu-peer-bench.sh: kvserve and llama.cpp
read the same file) and for the CPU weight-dtype reference test
(tests/cpu_weight_dtypes_test.py).

The float32 values depend only on --shape and --seed, so the three types of
one shape hold the same weights, rounded (BF16) or quantized (Q8_0) by the
`gguf` package, as llama.cpp's converter does. Norms stay F32, as llama.cpp
writes them. Weights are N(0, 1/fan_in), so activations stay O(1).

    write_random_gguf.py --out tiny-q8_0.gguf --type q8_0 [--shape tiny|tinyllama] [--seed 1]

Needs the `gguf` package and NumPy (tests' reference venv, or any venv).
"""
import argparse

import numpy as np
import gguf

# name: (vocab, hidden, intermediate, layers, heads, kv_heads, context)
SHAPES = {
    "tiny": (320, 128, 256, 2, 4, 2, 256),
    "tinyllama": (32000, 2048, 5632, 22, 32, 4, 2048),  # TinyLlama-1.1B's shape
}
TYPES = {"f32": gguf.GGMLQuantizationType.F32, "bf16": gguf.GGMLQuantizationType.BF16,
         "q8_0": gguf.GGMLQuantizationType.Q8_0}


def vocabulary(size):
    """<unk>, <s>, </s>, the 256 byte tokens, then word pieces up to `size`."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581w{i}" for i in range(size - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (size - 259)
    scores = [0.0] * 259 + [-float(i) for i in range(size - 259)]
    return tokens, types, scores


def tensors(shape):
    """(name, [rows, cols] or [n], fan_in or 0 for a norm), in llama.cpp's order."""
    vocab, hidden, inter, layers, heads, kv_heads, _ = shape
    head_dim = hidden // heads
    yield "token_embd.weight", [vocab, hidden], hidden
    for i in range(layers):
        p = f"blk.{i}."
        yield p + "attn_norm.weight", [hidden], 0
        yield p + "attn_q.weight", [hidden, hidden], hidden
        yield p + "attn_k.weight", [kv_heads * head_dim, hidden], hidden
        yield p + "attn_v.weight", [kv_heads * head_dim, hidden], hidden
        yield p + "attn_output.weight", [hidden, hidden], hidden
        yield p + "ffn_norm.weight", [hidden], 0
        yield p + "ffn_gate.weight", [inter, hidden], hidden
        yield p + "ffn_up.weight", [inter, hidden], hidden
        yield p + "ffn_down.weight", [hidden, inter], inter
    yield "output_norm.weight", [hidden], 0
    yield "output.weight", [vocab, hidden], hidden


def write(path, shape_name, type_name, seed):
    shape = SHAPES[shape_name]
    vocab, hidden, inter, layers, heads, kv_heads, context = shape
    writer = gguf.GGUFWriter(path, "llama", use_temp_file=True)
    writer.add_name(f"random-{shape_name}-{type_name}")
    writer.add_context_length(context)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(inter)
    writer.add_block_count(layers)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type({"f32": 0, "bf16": 32, "q8_0": 7}[type_name])
    tokens, types, scores = vocabulary(vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_scores(scores)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    qtype = TYPES[type_name]
    for index, (name, dims, fan_in) in enumerate(tensors(shape)):
        rng = np.random.default_rng([seed, index])
        if fan_in == 0:  # a norm: near 1, F32
            writer.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(dims)).astype(np.float32))
            continue
        values = (rng.standard_normal(dims, dtype=np.float32) / np.sqrt(fan_in)).astype(np.float32)
        if qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(name, values)
        else:
            writer.add_tensor(name, gguf.quants.quantize(values, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--type", choices=sorted(TYPES), required=True)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write(args.out, args.shape, args.type, args.seed)


if __name__ == "__main__":
    main()
