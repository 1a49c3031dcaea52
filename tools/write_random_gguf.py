#!/usr/bin/env python3
"""Writes a Llama GGUF file with random weights in one storage type (F32,
BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, or llama-quantize's
Q4_K_M mix) and a small SentencePiece-style vocabulary, for comparing engines
on the same weights (deploy/cpu-peer-bench.sh: kvserve and llama.cpp read the
same file) and for the CPU weight-format reference tests
(tests/cpu_weight_dtypes_test.py, tests/quantized_weights_test.py).

The float32 values depend only on --shape and --seed, so the types of one
shape hold the same weights, rounded (BF16) or quantized (Q8_0 ... Q5_1 by
the `gguf` package, as llama.cpp's converter does; the K-quants by
tools/gguf_kquants.py, checked against gguf-py's dequantization). A row
length that is not a multiple of 256 falls back as llama-quantize does (Q4_K
→ Q5_0, Q5_K → Q5_1, Q6_K → Q8_0; Q2_K and Q3_K → Q4_0, where today's
llama-quantize picks IQ4_NL, which kvserve does not read). Norms stay F32, as llama.cpp writes them.
Weights are N(0, 1/fan_in), so activations stay O(1).

--random_blocks writes random block bytes with scales of that size instead of
quantizing floats: seconds instead of minutes for an 8B-shaped file whose
values do not matter (tests/memory_8b.sh: it must load and decode).

    write_random_gguf.py --out tiny-q8_0.gguf --type q8_0 [--shape tiny|tinyllama|...] [--seed 1]

Needs the `gguf` package and NumPy (tests' reference venv, or any venv).
"""
import argparse

import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_kquants  # noqa: E402

# name: (vocab, hidden, intermediate, layers, heads, kv_heads, context)
SHAPES = {
    "tiny": (320, 128, 256, 2, 4, 2, 256),
    "tiny256": (320, 256, 512, 2, 4, 2, 256),  # rows of whole K-quant blocks
    "tinyllama": (32000, 2048, 5632, 22, 32, 4, 2048),  # TinyLlama-1.1B's shape
    "llama8b": (128256, 4096, 14336, 32, 32, 8, 8192),  # Llama-3.1-8B's shape
}
Q = gguf.GGMLQuantizationType
TYPES = {"f32": Q.F32, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1,
         "q5_0": Q.Q5_0, "q5_1": Q.Q5_1, "q2_k": Q.Q2_K, "q3_k": Q.Q3_K, "q4_k": Q.Q4_K,
         "q5_k": Q.Q5_K, "q6_k": Q.Q6_K, "q4_k_m": Q.Q4_K}
# llama.cpp's LLAMA_FTYPE_* (general.file_type)
FILE_TYPES = {"f32": 0, "bf16": 32, "q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9,
              "q2_k": 10, "q3_k": 11, "q4_k": 15, "q5_k": 17, "q6_k": 18, "q4_k_m": 15}
K_QUANT_FALLBACK = {Q.Q2_K: Q.Q4_0, Q.Q3_K: Q.Q4_0, Q.Q4_K: Q.Q5_0, Q.Q5_K: Q.Q5_1,
                    Q.Q6_K: Q.Q8_0}
BLOCK_BYTES = {Q.Q8_0: (32, 34), Q.Q4_0: (32, 18), Q.Q4_1: (32, 20), Q.Q5_0: (32, 22),
               Q.Q5_1: (32, 24), Q.Q2_K: (256, 84), Q.Q3_K: (256, 110), Q.Q4_K: (256, 144),
               Q.Q5_K: (256, 176), Q.Q6_K: (256, 210)}


def tensor_type(type_name, name, layer, layers):
    """The storage type of one matrix: one type, or llama-quantize's Q4_K_M
    choice (Q6_K for the output, and for attn_v / ffn_down in the first and
    last eighth of the layers and every third layer between)."""
    if type_name != "q4_k_m":
        return TYPES[type_name]
    if name == "output.weight":
        return Q.Q6_K
    more_bits = layer is not None and (layer < layers // 8 or layer >= 7 * layers // 8 or
                                       (layer - layers // 8) % 3 == 2)
    if more_bits and (name.endswith("attn_v.weight") or name.endswith("ffn_down.weight")):
        return Q.Q6_K
    return Q.Q4_K


def quantize(values, qtype):
    if qtype == Q.Q2_K:
        return gguf_kquants.quantize_q2_k(values)
    if qtype == Q.Q3_K:
        return gguf_kquants.quantize_q3_k(values)
    if qtype == Q.Q4_K:
        return gguf_kquants.quantize_q4_k(values)
    if qtype == Q.Q5_K:
        return gguf_kquants.quantize_q5_k(values)
    if qtype == Q.Q6_K:
        return gguf_kquants.quantize_q6_k(values)
    return gguf.quants.quantize(values, qtype)


def random_blocks(rng, dims, qtype, fan_in):
    """Random block bytes whose scale fields give weights of about 1/√fan_in."""
    elems, size = BLOCK_BYTES[qtype]
    rows, cols = dims
    blocks = rng.integers(0, 256, size=(rows, cols // elems, size), dtype=np.uint8)
    std = 1.0 / np.sqrt(fan_in)
    half = lambda v: np.frombuffer(np.float16(v).tobytes(), dtype=np.uint8)  # noqa: E731
    if qtype in (Q.Q4_K, Q.Q5_K):
        blocks[:, :, 0:2] = half(std / 32 / 8)
        blocks[:, :, 2:4] = half(std / 32 / 8)
    elif qtype == Q.Q6_K:
        blocks[:, :, 208:210] = half(std / 64 / 18)
    elif qtype == Q.Q3_K:
        blocks[:, :, 108:110] = half(std / 4 / 16)
    elif qtype == Q.Q2_K:
        blocks[:, :, 80:82] = half(std / 2 / 8)
        blocks[:, :, 82:84] = half(std / 2 / 8)
    else:
        blocks[:, :, 0:2] = half(std / 8)
        if qtype in (Q.Q4_1, Q.Q5_1):
            blocks[:, :, 2:4] = half(-std)
    return blocks.reshape(rows, -1)


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


def write(path, shape_name, type_name, seed, use_random_blocks=False):
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
    writer.add_file_type(FILE_TYPES[type_name])
    tokens, types, scores = vocabulary(vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_scores(scores)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    for index, (name, dims, fan_in) in enumerate(tensors(shape)):
        rng = np.random.default_rng([seed, index])
        if fan_in == 0:  # a norm: near 1, F32
            writer.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(dims)).astype(np.float32))
            continue
        layer = int(name.split(".")[1]) if name.startswith("blk.") else None
        qtype = tensor_type(type_name, name, layer, layers)
        if qtype in K_QUANT_FALLBACK and dims[-1] % 256 != 0:
            qtype = K_QUANT_FALLBACK[qtype]
        if use_random_blocks and qtype in BLOCK_BYTES:
            writer.add_tensor(name, random_blocks(rng, dims, qtype, fan_in), raw_dtype=qtype)
            continue
        values = (rng.standard_normal(dims, dtype=np.float32) / np.sqrt(fan_in)).astype(np.float32)
        if qtype == Q.F32:
            writer.add_tensor(name, values)
            continue
        data = quantize(values, qtype)
        if qtype in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K):  # our writer, checked by gguf-py's reader
            error = np.abs(gguf.quants.dequantize(data[:4], qtype) - values[:4]).max()
            assert error < 0.5 * np.abs(values[:4]).max(), (name, qtype.name, error)
        writer.add_tensor(name, data, raw_dtype=qtype)
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
    parser.add_argument("--random_blocks", action="store_true",
                        help="random block bytes instead of quantized floats (block types only)")
    args = parser.parse_args()
    write(args.out, args.shape, args.type, args.seed, args.random_blocks)


if __name__ == "__main__":
    main()
