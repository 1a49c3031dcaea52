#!/usr/bin/env python3
"""Differential test: kvserve's GGUF reader against gguf-py and Hugging Face `tokenizers`.

1. Dequantization: for every type kvserve supports (F32, F16, BF16, Q8_0, Q4_0,
   Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), random blocks are written with
   gguf.GGUFWriter, read back by `kvserve-gguf-tool dequant`, and compared bit
   for bit with gguf.quants.dequantize (numpy). With --smollm2, the real file's
   tensors of every type it holds are compared the same way.
2. Tokenizers: the tokenizer.json kvserve synthesizes from GGUF metadata
   (`kvserve-gguf-tool tokenizer-json`) must encode and decode exactly like a
   reference `tokenizers.Tokenizer`:
   - the bytelevel-bpe fixture written as a gpt2/llama-bpe GGUF, against the
     fixture's own tokenizer.json;
   - the same vocabulary as gpt2/gpt-2, and tiny-qwen2's as gpt2/qwen2, against
     tokenizers built here the way transformers' converters build them;
   - the spm-bpe-bytefallback fixture's vocabulary as a `llama` (SentencePiece)
     GGUF with scores, against transformers' LlamaConverter construction
     (merges from scores with generate_merges, byte_fallback, "▁");
   - with --smollm2, the real SmolLM2 file (gpt2/smollm), against a tokenizer
     built from its vocab and merges as SmolLM2's tokenizer.json is.
(The forward pass on the real file against a NumPy reference in llama.cpp's
semantics is tests/gguf_reference_test.py.)

Usage: gguf_diff_test.py --gguf-tool PATH --tokenize-tool PATH --data DIR --work-dir DIR
                         [--smollm2 FILE.gguf]
"""
import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_diff_test import random_string, run_tool  # noqa: E402

# Byte offsets of the float16 scale fields inside each block type: random
# bytes there could be inf/NaN, which would hide differences.
HALF_FIELDS = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2],
               Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}
SUPPORTED = [Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q2_K, Q.Q3_K, Q.Q4_K,
             Q.Q5_K, Q.Q6_K]


def random_blocks(rng, qtype, rows, cols):
    """Random bytes for a [rows, cols] tensor of `qtype`, with finite scales."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    if qtype == Q.F32:
        return rng.standard_normal((rows, cols)).astype(np.float32).view(np.uint8)
    if qtype == Q.F16:
        return (rng.standard_normal((rows, cols)) * 100).astype(np.float16).view(np.uint8)
    if qtype == Q.BF16:
        f = (rng.standard_normal((rows, cols)) * 1e3).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(rows, cols * 2)
    n_blocks = rows * cols // block
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    for off in HALF_FIELDS[qtype]:
        halves = (rng.standard_normal(n_blocks) * 0.05).astype(np.float16)
        raw[:, off:off + 2] = halves.view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(rows, cols // block * size)


def compare_dequant(tool, path, names, work_dir, reference):
    out_dir = os.path.join(work_dir, os.path.basename(path) + ".out")
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([tool, "dequant", path, out_dir] + names, check=True)
    bad = 0
    for name in names:
        want = reference[name].astype(np.float32).reshape(-1)
        got = np.fromfile(os.path.join(out_dir, name + ".f32"), dtype=np.float32)
        if got.shape != want.shape or not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            diff = np.abs(got - want).max() if got.shape == want.shape else "shape"
            print(f"  {os.path.basename(path)} {name}: MISMATCH (max abs diff {diff})")
            bad += 1
    return bad


def check_dequant(tool, work_dir, smollm2):
    rng = np.random.default_rng(7)
    path = os.path.join(work_dir, "all_types.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    for qtype in SUPPORTED:
        block = gguf.GGML_QUANT_SIZES[qtype][0]
        cols = 512 if block == 256 else 96
        writer.add_tensor(qtype.name, random_blocks(rng, qtype, 5, cols), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(path)
    reference = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in reader.tensors}
    bad = compare_dequant(tool, path, [q.name for q in SUPPORTED], work_dir, reference)
    print(f"dequant: {len(SUPPORTED)} types x 5 rows, {bad} mismatches", flush=True)
    if smollm2:
        reader = gguf.GGUFReader(smollm2)
        names = ["token_embd.weight", "output_norm.weight"] + [
            t.name for t in reader.tensors if t.name.startswith(("blk.0.", "blk.29."))]
        reference = {t.name: gguf.quants.dequantize(t.data, t.tensor_type)
                     for t in reader.tensors if t.name in names}
        types = sorted({t.tensor_type.name for t in reader.tensors if t.name in names})
        b = compare_dequant(tool, smollm2, names, work_dir, reference)
        print(f"dequant: SmolLM2 {len(names)} tensors ({', '.join(types)}), {b} mismatches")
        bad += b
    return bad


# --- tokenizers -----------------------------------------------------------------

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def vocab_of(tokenizer_json):
    """(tokens by id, token types, merges as "a b") of a byte-level tokenizer.json."""
    spec = json.load(open(tokenizer_json, encoding="utf-8"))
    vocab = dict(spec["model"]["vocab"])
    special = set()
    for t in spec["added_tokens"]:
        vocab.setdefault(t["content"], t["id"])
        if t["special"]:
            special.add(t["content"])
    tokens = [None] * (max(vocab.values()) + 1)
    for tok, i in vocab.items():
        tokens[i] = tok
    types = [3 if t in special else 1 for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return tokens, types, merges


def write_tokenizer_gguf(path, model, tokens, types, merges=None, scores=None, pre=None,
                         bos=None, eos=None, add_bos=None, unk=None, add_space_prefix=None):
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_tokenizer_model(model)
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if merges is not None:
        writer.add_token_merges(merges)
    if scores is not None:
        writer.add_token_scores(scores)
    if bos is not None:
        writer.add_bos_token_id(bos)
    if eos is not None:
        writer.add_eos_token_id(eos)
    if unk is not None:
        writer.add_unk_token_id(unk)
    if add_bos is not None:
        writer.add_add_bos_token(add_bos)
    if add_space_prefix is not None:
        writer.add_add_space_prefix(add_space_prefix)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def byte_level_reference(tokens, types, merges, pre_tokenizer, normalizer=None,
                         ignore_merges=False, bos=None):
    vocab = {t: i for i, t in enumerate(tokens)}  # special tokens too, as real files have
    merge_pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(models.BPE(vocab, merge_pairs, ignore_merges=ignore_merges))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for i, t in enumerate(tokens) if types[i] == 3])
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{tokens[bos]} $A", special_tokens=[(tokens[bos], bos)])
    return tok


def generate_merges(vocab, vocab_scores):
    """transformers.convert_slow_tokenizer.generate_merges (the SentencePiece extractor)."""
    vocab_scores = dict(vocab_scores)
    merges = []
    for merge, piece_score in vocab_scores.items():
        local = []
        for index in range(1, len(merge)):
            piece_l, piece_r = merge[:index], merge[index:]
            if piece_l in vocab and piece_r in vocab:
                local.append((piece_l, piece_r, piece_score))
        local = sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges = sorted(merges, key=lambda val: (val[2], len(val[0]), len(val[1])), reverse=True)
    return [(val[0], val[1]) for val in merges]


def llama_spm_reference(tokens, scores, types, bos, unk, prefix=True):
    """transformers' LlamaConverter (legacy normalizer form) from tokens and scores;
    without `prefix` (add_space_prefix false) no "▁" is prepended or stripped."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = generate_merges(vocab, list(zip(tokens, scores)))
    tok = Tokenizer(models.BPE(vocab, merges, unk_token=tokens[unk], fuse_unk=True,
                               byte_fallback=True))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for i, t in enumerate(tokens) if types[i] in (2, 3)])
    replace = normalizers.Replace(" ", "▁")
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), replace]) if prefix else replace
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence(steps + [decoders.Strip(" ", 1, 0)] if prefix else steps)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{tokens[bos]} $A", special_tokens=[(tokens[bos], bos)])
    return tok


def check_tokenizer(name, reference, gguf_path, gguf_tool, tokenize_tool, work_dir, rng,
                    num_strings, num_decodes, failures):
    json_path = os.path.join(work_dir, name + ".tokenizer.json")
    with open(json_path, "wb") as f:
        f.write(subprocess.run([gguf_tool, "tokenizer-json", gguf_path], check=True,
                               capture_output=True).stdout)
    vocab_size = reference.get_vocab_size(with_added_tokens=True)
    texts = [random_string(rng) for _ in range(num_strings)]
    requests, expected = [], []
    for text in texts:
        for special in (False, True):
            requests.append({"encode": text, "add_special_tokens": special})
            expected.append({"ids": reference.encode(text, add_special_tokens=special).ids})
    id_lists = [[rng.randrange(vocab_size) for _ in range(rng.choice([1, 2, 5, 20, 60]))]
                for _ in range(num_decodes)]
    id_lists += [reference.encode(t, add_special_tokens=True).ids for t in texts[:num_decodes]]
    for ids in id_lists:
        for skip in (False, True):
            requests.append({"decode": ids, "skip_special_tokens": skip})
            expected.append({"text": reference.decode(ids, skip_special_tokens=skip)})
    replies = run_tool(tokenize_tool, json_path, requests)
    bad = 0
    for request, want, got in zip(requests, expected, replies):
        if want != got:
            bad += 1
            if len(failures) < 20:
                failures.append(f"[{name}] {json.dumps(request, ensure_ascii=False)[:200]}\n"
                                f"    python:  {json.dumps(want, ensure_ascii=False)[:200]}\n"
                                f"    kvserve: {json.dumps(got, ensure_ascii=False)[:200]}")
    print(f"tokenizer {name}: {len(texts)} strings x 2 encodes, {len(id_lists)} id lists x 2 "
          f"decodes, {bad} mismatches", flush=True)
    return bad


def tokenizer_cases(data_dir, work_dir, smollm2):
    """(name, reference Tokenizer, GGUF path) for each tokenizer shape."""
    cases = []
    fixture = os.path.join(data_dir, "tokenizers", "bytelevel-bpe", "tokenizer.json")
    tokens, types, merges = vocab_of(fixture)
    bos = tokens.index("<|begin_of_text|>")
    path = os.path.join(work_dir, "llama-bpe.gguf")
    write_tokenizer_gguf(path, "gpt2", tokens, types, merges, pre="llama-bpe", bos=bos,
                         add_bos=True)
    cases.append(("gpt2-llama-bpe", Tokenizer.from_file(fixture), path))

    path = os.path.join(work_dir, "gpt-2.gguf")
    write_tokenizer_gguf(path, "gpt2", tokens, types, merges, pre="gpt-2", add_bos=False)
    cases.append(("gpt2-gpt-2", byte_level_reference(
        tokens, types, merges, pre_tokenizers.ByteLevel(add_prefix_space=False)), path))

    path = os.path.join(work_dir, "gpt-2-prefix.gguf")
    write_tokenizer_gguf(path, "gpt2", tokens, types, merges, pre="gpt-2", add_space_prefix=True)
    cases.append(("gpt2-gpt-2-space-prefix", byte_level_reference(
        tokens, types, merges, pre_tokenizers.ByteLevel(add_prefix_space=True)), path))

    qwen = os.path.join(data_dir, "tiny-qwen2", "tokenizer.json")
    q_tokens, q_types, q_merges = vocab_of(qwen)
    path = os.path.join(work_dir, "qwen2.gguf")
    write_tokenizer_gguf(path, "gpt2", q_tokens, q_types, q_merges, pre="qwen2")
    cases.append(("gpt2-qwen2", byte_level_reference(
        q_tokens, q_types, q_merges,
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        normalizer=normalizers.NFC()), path))

    spm = json.load(open(os.path.join(data_dir, "tokenizers", "spm-bpe-bytefallback",
                                      "tokenizer.json"), encoding="utf-8"))
    s_vocab = dict(spm["model"]["vocab"])
    s_tokens = [None] * len(s_vocab)
    for t, i in s_vocab.items():
        s_tokens[i] = t
    s_types = [6 if t.startswith("<0x") and len(t) == 6 else 1 for t in s_tokens]
    for t in spm["added_tokens"]:
        if t["content"] in ("<unk>",):
            s_types[t["id"]] = 2
        elif t["content"] in ("<s>", "</s>"):
            s_types[t["id"]] = 3
    # Llama-2-style scores: later pieces rank lower (ties among the base characters).
    s_scores = [0.0 if s_types[i] != 1 else -float(i) for i in range(len(s_tokens))]
    unk, bos = s_tokens.index("<unk>"), s_tokens.index("<s>")
    path = os.path.join(work_dir, "llama-spm.gguf")
    write_tokenizer_gguf(path, "llama", s_tokens, s_types, scores=s_scores, bos=bos,
                         eos=s_tokens.index("</s>"), unk=unk, add_bos=True)
    cases.append(("llama-spm", llama_spm_reference(s_tokens, s_scores, s_types, bos, unk), path))
    path = os.path.join(work_dir, "llama-spm-no-prefix.gguf")
    write_tokenizer_gguf(path, "llama", s_tokens, s_types, scores=s_scores, bos=bos,
                         eos=s_tokens.index("</s>"), unk=unk, add_bos=True, add_space_prefix=False)
    cases.append(("llama-spm-no-prefix", llama_spm_reference(s_tokens, s_scores, s_types, bos,
                                                             unk, prefix=False), path))

    if smollm2:
        reader = gguf.GGUFReader(smollm2)
        field = lambda k: reader.fields[k].contents()  # noqa: E731
        assert field("tokenizer.ggml.pre") == "smollm"
        cases.append(("smollm2", byte_level_reference(
            field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type"),
            field("tokenizer.ggml.merges"),
            pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                     pre_tokenizers.ByteLevel(add_prefix_space=False)])),
            smollm2))
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf-tool", required=True)
    parser.add_argument("--tokenize-tool", required=True)
    parser.add_argument("--data", required=True, help="tests/data")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--smollm2", default="", help="the SmolLM2 GGUF file, when available")
    parser.add_argument("--strings", type=int, default=1500)
    parser.add_argument("--decodes", type=int, default=200)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    smollm2 = args.smollm2 if args.smollm2 and os.path.exists(args.smollm2) else ""
    if not smollm2:
        print("no SmolLM2 file: its checks are left out")

    bad = check_dequant(args.gguf_tool, args.work_dir, smollm2)
    rng = random.Random(20261124)
    failures = []
    for name, reference, path in tokenizer_cases(args.data, args.work_dir, smollm2):
        bad += check_tokenizer(name, reference, path, args.gguf_tool, args.tokenize_tool,
                               args.work_dir, rng, args.strings, args.decodes, failures)
    for failure in failures:
        print(failure)
    print("PASS" if bad == 0 else f"FAIL: {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
