#!/usr/bin/env python3
"""Differential test: kvserve's C++ tokenizer.json reader against Python `tokenizers`.

For each tokenizer (the two fixtures in tests/data/tokenizers, and tokenizers
this script trains with `tokenizers` itself to cover GPT-2, Llama-3, Qwen2,
SentencePiece/Metaspace and other pre-tokenizer shapes), thousands of varied
strings are encoded with and without special tokens, and random id sequences
are decoded with and without skip_special_tokens, by both
`kvserve-tokenize-tool` and `tokenizers`. Every result must be identical.

Usage: tokenizer_diff_test.py --tool PATH --fixtures DIR --work-dir DIR
Needs the `tokenizers` package (ctest runs it in a virtualenv; see
tests/tools/setup_tokenizers_venv.sh).
"""
import argparse
import json
import os
import random
import subprocess
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import processors, trainers
from tokenizers import AddedToken

GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SNIPPETS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "It's 2026: 12345678 tokens, 3.14159! I'LL SAY IT'S FINE, isn't it? We'd've",
    "def f(x):\n    return x ** 2  # square\n\n\tif x != 0:\r\n\t\tpass",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot product",
    "注意力机制的核心公式是什么？它由查询、键和值组成。",
    "日本語のテキストとカタカナ、ひらがな。한국어 문장도 있습니다.",
    "$$\\mathrm{softmax}(QK^T/\\sqrt{d_k})V$$ and \\frac{a}{b} + \\alpha_{i,j}^2",
    "emoji 🤖🚀 and é, ñ, ü; family 👨‍👩‍👧‍👦, flag 🇫🇷, skin 👍🏽, heart ❤️",
    "Ελληνικά κείμενα, кириллица и العربية מימין לשמאל हिन्दी ไทย",
    "Combining: e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 Z\u0351\u036b\u0343",
    "Tabs\tand\u00a0non-breaking\u2003spaces\u3000ideographic\u2028line\u0085nel",
    "<|begin_of_text|>system<|eot_id|><s>[INST] hi [/INST]</s><|im_start|>user",
    "<0x41><0xE4> byte-looking text ▁leading ▁▁ metaspace ▁",
    "   leading and trailing   \n\n\n   \r\n  \t ",
    "URL https://example.com/a?b=c&d=e#frag, email a.b+c@example.org, path /usr/bin/env",
    "Numbers: 1,234,567.89 -42 +7 0x1F 1e-9 ٣٤٥ ३४५ ⅧⅨ ½ ²³",
    "Mixed 中文 and English 混合, and 'quotes' “curly” «guillemets» — dashes –",
    "SHOUTING'S FUN'T 'S 'Re 'vE 'ſ 'K' ﬁ ligature ǅ title",
    "\ufffd replacement \u0000 nul \u0007 bell \u001b[31m ansi \u007f del \u200b zwsp \ufeff bom",
]

POOLS = [
    (30, [chr(c) for c in range(0x61, 0x7B)] + [chr(c) for c in range(0x41, 0x5B)]),
    (8, [chr(c) for c in range(0x30, 0x3A)]),
    (10, list(" !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")),
    (12, [" ", " ", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u2028",
          "\u2029", "\u3000", "\u2003", "\u200b", "\u1680", "\u180e", "\ufeff"]),
    (5, [chr(c) for c in range(0xC0, 0x180)]),
    (4, [chr(c) for c in range(0x391, 0x3CA)] + [chr(c) for c in range(0x410, 0x450)]),
    (8, [chr(c) for c in range(0x4E00, 0x4F00)] + [chr(c) for c in range(0x3041, 0x3097)] +
     [chr(c) for c in range(0xAC00, 0xAC80)]),
    (3, [chr(c) for c in range(0x600, 0x650)] + [chr(c) for c in range(0x900, 0x950)] +
     [chr(c) for c in range(0xE01, 0xE3A)]),
    (5, [chr(c) for c in range(0x1F300, 0x1F650)] + ["\u200d", "\ufe0f", "\U0001F3FD",
                                                      "\U0001F1EB\U0001F1F7"]),
    (3, [chr(c) for c in range(0x300, 0x370)]),
    (2, [chr(c) for c in range(0x0, 0x20)] + ["\x7f", "\ufffd", "\U0010FFFD", "\U000E0041"]),
    (2, ["'s", "'S", "'t", "'RE", "'ve", "'M", "'ll", "'D", "'ſ", "\u212a", "ﬀ", "İ"]),
    (2, ["٣", "३", "Ⅻ", "½", "²", "𝟙", "①"]),
    # Decomposed, reordered and excluded forms for the NFC/NFD normalizers.
    (4, ["e\u0301", "A\u030a", "a\u0323\u0302", "a\u0302\u0323", "o\u0308\u0304",
         "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u0958", "\u212b",
         "\u2126", "\u0344", "\u0f73", "\u1e9b\u0323", "\u0301", "\u0301\u0301a",
         "\u00c5", "\u1e0b\u0323", "\u05d0\u05b7", "\u0b47\u0b3e", "\u3071", "\u306f\u309a"]),
    (3, ["▁", "▁▁", "<0x41>", "<0xZZ>", "<s>", "</s>", "<unk>", "<|begin_of_text|>",
         "<|eot_id|>", "<|begin_of", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<mask>",
         " <mask> ", "hello", " hello", "HELLO", "<|sep|>", " <|sep|> ", "[INST]", "[/INST]",
         "<tool_call>", "<sep>", "▁<sep>", "café", "cafe\u0301"]),
]


def random_string(rng):
    kind = rng.random()
    if kind < 0.15:
        text = rng.choice(SNIPPETS)
        if rng.random() < 0.5:
            a = rng.randrange(len(text) + 1)
            b = rng.randrange(a, len(text) + 1)
            text = text[a:b]
        return text
    if kind < 0.155:  # a long mixed text (thousands of characters)
        return "".join(random_string(rng) for _ in range(rng.randrange(20, 60)))
    if kind < 0.2:  # a very long word, or a long whitespace run
        unit = rng.choice(["a", "ab", "xyz", "9", " ", "\n", "中", "🤖", "\t ", "é", "_-"])
        return rng.choice(["", " ", "x"]) + unit * rng.randrange(50, 1200)
    if kind < 0.3:  # snippets glued together
        return "".join(rng.choice(SNIPPETS) for _ in range(rng.randrange(2, 4)))
    weights = [w for w, _ in POOLS]
    length = rng.choice([1, 2, 3, 5, 8, 13, 21, 40, 80, 200])
    out = []
    for _ in range(length):
        pool = rng.choices(POOLS, weights=weights)[0][1]
        piece = rng.choice(pool)
        out.append(piece * (rng.randrange(1, 6) if rng.random() < 0.1 else 1))
    return "".join(out)


def training_corpus(rng):
    lines = list(SNIPPETS) * 20
    lines += [random_string(rng) for _ in range(600)]
    return lines


def byte_level_tokenizer(rng, regex, specials, template, ignore_merges, legacy_merges=False):
    """A byte-level BPE (GPT-2 / Llama-3 / Qwen2 shape) trained on a small corpus."""
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if regex is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_corpus(rng), trainer)
    if template:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{specials[0]} $A", special_tokens=[(specials[0], tok.token_to_id(specials[0]))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    spec = json.loads(tok.to_str())
    if legacy_merges:
        spec["model"]["merges"] = [" ".join(m) for m in spec["model"]["merges"]]
    return spec


def with_byte_fallback(spec):
    """Adds <0x00>..<0xFF> tokens at the end of the vocabulary and turns on byte_fallback."""
    vocab = spec["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for b in range(256):
        name = f"<0x{b:02X}>"
        if name not in vocab:
            vocab[name] = next_id
            next_id += 1
    spec["model"]["byte_fallback"] = True
    return spec


def metaspace_tokenizer(rng, prepend_scheme, split, decoder_kind, extra_pretok=None,
                        normalizer=None):
    """A SentencePiece-shaped BPE: Metaspace pre-tokenizer, byte fallback, <unk>, <s> template."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    metaspace = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=prepend_scheme,
                                         split=split)
    tok.pre_tokenizer = (metaspace if extra_pretok is None else
                         pre_tokenizers.Sequence([extra_pretok, metaspace]))
    if normalizer is not None:
        tok.normalizer = normalizer
    if decoder_kind == "metaspace":
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(
            replacement="▁", prepend_scheme=prepend_scheme, split=split)])
    else:
        tok.decoder = decoders.Sequence([
            decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
            decoders.Strip(content=" ", left=1, right=0)])
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False, limit_alphabet=300)
    tok.train_from_iterator(training_corpus(rng), trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", 1)])
    return with_byte_fallback(json.loads(tok.to_str()))


def subword_tokenizer(rng):
    """BPE with continuing_subword_prefix and end_of_word_suffix, no decoder (tokens joined by spaces)."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##",
                               end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+"), behavior="removed")
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["[UNK]"], show_progress=False,
                                  continuing_subword_prefix="##", end_of_word_suffix="</w>")
    tok.train_from_iterator(training_corpus(rng), trainer)
    return json.loads(tok.to_str())


def add_tokens(spec, tokens):
    """Adds added tokens (AddedToken objects) through `tokenizers` itself."""
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.add_tokens([t for t in tokens if not t.special])
    tok.add_special_tokens([t for t in tokens if t.special])
    return json.loads(tok.to_str())


def constructed_tokenizers(rng):
    out = {}
    out["gpt2-bytelevel"] = add_tokens(
        byte_level_tokenizer(rng, None, ["<|endoftext|>"], template=False, ignore_merges=False),
        [AddedToken("<mask>", single_word=True, lstrip=True, rstrip=True, normalized=False,
                    special=False),
         AddedToken("hello", normalized=True, special=False)])
    out["llama3-split"] = byte_level_tokenizer(
        rng, LLAMA3_REGEX, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
        template=True, ignore_merges=True, legacy_merges=True)
    qwen2 = byte_level_tokenizer(rng, QWEN2_REGEX, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                 template=False, ignore_merges=False)
    qwen2["normalizer"] = {"type": "NFC"}  # as Qwen2's tokenizer.json has
    out["qwen2-split-nfc"] = add_tokens(
        qwen2, [AddedToken("<tool_call>", normalized=False, special=False),
                AddedToken("caf\u00e9", normalized=True, special=False)])
    bl_prefix = byte_level_tokenizer(rng, None, ["<|endoftext|>"], template=False,
                                     ignore_merges=False)
    bl_prefix["pre_tokenizer"]["add_prefix_space"] = True
    out["bytelevel-prefix-space"] = add_tokens(
        bl_prefix, [AddedToken("<|sep|>", normalized=False, special=True)])
    out["metaspace-first"] = add_tokens(
        metaspace_tokenizer(rng, "first", split=False, decoder_kind="metaspace"),
        [AddedToken("[INST]", normalized=False, special=True),
         AddedToken("[/INST]", normalized=False, special=True)])
    out["metaspace-always-split-digits"] = metaspace_tokenizer(
        rng, "always", split=True, decoder_kind="strip",
        extra_pretok=pre_tokenizers.Digits(individual_digits=True),
        normalizer=normalizers.Sequence([normalizers.NFD(),
                                         normalizers.Replace(Regex(r"\s{2,}"), " ")]))
    out["metaspace-never-normalized-added"] = add_tokens(
        metaspace_tokenizer(rng, "never", split=True, decoder_kind="metaspace",
                            normalizer=normalizers.Sequence([
                                normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])),
        [AddedToken("hello", normalized=True, special=False, rstrip=True),
         AddedToken("<sep>", normalized=True, special=True)])
    # Unknown characters without byte fallback, not fused; and byte fallback with
    # some <0xXX> tokens missing (those characters fall back to <unk>).
    no_fallback = metaspace_tokenizer(rng, "always", split=True, decoder_kind="strip")
    no_fallback["model"]["byte_fallback"] = False
    no_fallback["model"]["fuse_unk"] = False
    out["unk-unfused"] = no_fallback
    partial = metaspace_tokenizer(rng, "first", split=False, decoder_kind="strip")
    for b in range(0x80, 0xC0, 3):
        partial["model"]["vocab"].pop(f"<0x{b:02X}>")
    out["byte-fallback-partial"] = partial
    out["subword-prefix-suffix"] = subword_tokenizer(rng)
    behaviors = ["removed", "merged_with_previous", "merged_with_next", "contiguous"]
    for i, behavior in enumerate(behaviors):
        spec = byte_level_tokenizer(rng, None, ["<|endoftext|>"], template=False,
                                    ignore_merges=False)
        split = pre_tokenizers.Split(Regex(r"\p{P}+|\s") if i % 2 else "e", behavior=behavior,
                                     invert=(i == 3))
        spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            json.loads(split.__getstate__()), json.loads(
                pre_tokenizers.Digits(individual_digits=False).__getstate__()),
            spec["pre_tokenizer"]]}
        out[f"split-{behavior}"] = spec
    return out


def run_tool(tool, path, requests):
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    result = subprocess.run([tool, path], input=payload.encode(), capture_output=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} {path} failed: {result.stderr.decode(errors='replace')}")
    # Not splitlines(): the replies may contain U+0085 or U+2028 unescaped.
    lines = result.stdout.decode().split("\n")[:-1]
    if len(lines) != len(requests):
        raise RuntimeError(f"expected {len(requests)} replies, got {len(lines)}")
    return [json.loads(line) for line in lines]


def check_tokenizer(name, path, tool, rng, num_strings, num_decodes, failures):
    tok = Tokenizer.from_file(path)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    texts = [random_string(rng) for _ in range(num_strings)]
    requests, expected = [], []
    for text in texts:
        for special in (False, True):
            requests.append({"encode": text, "add_special_tokens": special})
            expected.append({"ids": tok.encode(text, add_special_tokens=special).ids})
    id_lists = []
    for _ in range(num_decodes):
        n = rng.choice([0, 1, 2, 3, 5, 8, 20, 60])
        id_lists.append([rng.randrange(vocab_size + 3) for _ in range(n)])
    for text in texts[:num_decodes]:  # real encodings too (special tokens included)
        id_lists.append(tok.encode(text, add_special_tokens=True).ids)
    for ids in id_lists:
        for skip in (False, True):
            requests.append({"decode": ids, "skip_special_tokens": skip})
            expected.append({"text": tok.decode(ids, skip_special_tokens=skip)})
    replies = run_tool(tool, path, requests)
    bad = 0
    for request, want, got in zip(requests, expected, replies):
        if want != got:
            bad += 1
            if len(failures) < 30:
                failures.append(f"[{name}] {json.dumps(request, ensure_ascii=False)[:300]}\n"
                                f"    python: {json.dumps(want, ensure_ascii=False)[:300]}\n"
                                f"    kvserve: {json.dumps(got, ensure_ascii=False)[:300]}")
    print(f"{name}: {len(texts)} strings x 2 encodes, {len(id_lists)} id lists x 2 decodes, "
          f"{bad} mismatches", flush=True)
    return len(texts), len(requests), bad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--strings", type=int, default=3000, help="strings per tokenizer")
    parser.add_argument("--decodes", type=int, default=400, help="random id lists per tokenizer")
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument("--extra", nargs="*", default=[],
                        help="more tokenizer.json files (e.g. the ones kvserve-mkmodel writes)")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    rng = random.Random(args.seed)

    paths = {}
    for name in sorted(os.listdir(args.fixtures)):
        path = os.path.join(args.fixtures, name, "tokenizer.json")
        if os.path.exists(path):
            paths[f"fixture:{name}"] = path
    for path in args.extra:
        paths[f"extra:{os.path.basename(os.path.dirname(path))}"] = path
    for name, spec in constructed_tokenizers(rng).items():
        path = os.path.join(args.work_dir, f"{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False)
        paths[name] = path

    failures = []
    total_strings = total_checks = total_bad = 0
    for name, path in paths.items():
        strings, checks, bad = check_tokenizer(name, path, args.tool, rng, args.strings,
                                               args.decodes, failures)
        total_strings += strings
        total_checks += checks
        total_bad += bad
    for failure in failures:
        print(failure)
    print(f"{len(paths)} tokenizers, {total_strings} strings, {total_checks} comparisons")
    print(f"{total_checks - total_bad} passed, {total_bad} failed")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
