#!/usr/bin/env python3
"""Writes the binary and generated seed corpora of tests/fuzz (the text ones,
templates and configs, are copies of tests/data files). Standard library
only, except the request seeds, which need the generated Python protos:

  PYTHONPATH=build/python /usr/bin/python3 tests/fuzz/make_seeds.py

Seeds are small real-shaped inputs: the fuzzer mutates from them, so each one
reaches deep into its parser (a whole valid file, not a fragment).
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")


def write(corpus, name, data):
    os.makedirs(os.path.join(HERE, corpus), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(HERE, corpus, name), "wb") as f:
        f.write(data)


# --- safetensors: 8-byte header length, JSON header, data ---------------------
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    f32 = lambda n: struct.pack(f"<{n}f", *[i * 0.25 for i in range(n)])
    write("safetensors_header", "llama-layer.safetensors", safetensors({
        "model.embed_tokens.weight": ("F32", [4, 8], f32(32)),
        "model.layers.0.input_layernorm.weight": ("BF16", [8], b"\x80\x3f" * 8),
        "model.layers.0.self_attn.q_proj.weight": ("F16", [8, 8], b"\x00\x3c" * 64),
        "model.norm.weight": ("F32", [8], f32(8)),
        "lm_head.weight": ("F32", [4, 8], f32(32)),
    }, metadata={"format": "pt"}))
    write("safetensors_header", "scalar-and-empty.safetensors", safetensors({
        "scalar": ("F32", [], f32(1)),
        "empty": ("F32", [0, 3], b""),
        "i64": ("I64", [2], struct.pack("<2q", 1, -1)),
    }))


# --- GGUF v3 -------------------------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


class Gguf:
    def __init__(self):
        self.kv, self.n_kv, self.tensors = b"", 0, []

    @staticmethod
    def s(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b

    def add(self, key, vtype, payload):
        self.kv += self.s(key) + struct.pack("<I", vtype) + payload
        self.n_kv += 1

    def u32(self, key, v): self.add(key, U32, struct.pack("<I", v))
    def f32(self, key, v): self.add(key, F32, struct.pack("<f", v))
    def boolean(self, key, v): self.add(key, BOOL, struct.pack("<B", v))
    def string(self, key, v): self.add(key, STR, self.s(v))

    def array(self, key, etype, fmt, values):
        body = struct.pack("<IQ", etype, len(values))
        for v in values:
            body += self.s(v) if etype == STR else struct.pack("<" + fmt, v)
        self.add(key, ARR, body)

    def tensor(self, name, dims, ggml_type, raw):
        self.tensors.append((name, dims, ggml_type, raw))

    def build(self, alignment=32):
        out = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), self.n_kv) + self.kv
        offsets, offset = [], 0
        for name, dims, ggml_type, raw in self.tensors:
            out += self.s(name) + struct.pack("<I", len(dims))
            out += b"".join(struct.pack("<Q", d) for d in dims)
            out += struct.pack("<IQ", ggml_type, offset)
            offsets.append(offset)
            offset = (offset + len(raw) + alignment - 1) // alignment * alignment
        out += b"\0" * (-len(out) % alignment)
        start = len(out)
        for (_, _, _, raw), off in zip(self.tensors, offsets):
            out += b"\0" * (start + off - len(out)) + raw
        return out


def llama_metadata(g, vocab):
    g.string("general.architecture", "llama")
    g.string("general.name", "fuzz-seed")
    g.u32("llama.context_length", 64)
    g.u32("llama.embedding_length", 32)
    g.u32("llama.block_count", 1)
    g.u32("llama.feed_forward_length", 64)
    g.u32("llama.attention.head_count", 2)
    g.u32("llama.attention.head_count_kv", 1)
    g.u32("llama.rope.dimension_count", 16)
    g.f32("llama.rope.freq_base", 10000.0)
    g.f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    g.u32("llama.vocab_size", vocab)


def quant_tensors(g):
    # One tensor per block format the reader knows: sizes per block of 32
    # (256 for K-quants) values, content arbitrary but of the right length.
    g.tensor("f32.weight", [32, 2], 0, struct.pack("<64f", *range(64)))
    g.tensor("f16.weight", [32], 1, b"\x00\x3c" * 32)
    g.tensor("q4_0.weight", [32], 2, struct.pack("<e", 0.5) + bytes(range(16)))
    g.tensor("q4_1.weight", [32], 3, struct.pack("<ee", 0.5, -1.0) + bytes(range(16)))
    g.tensor("q5_0.weight", [32], 6, struct.pack("<e", 0.5) + bytes(4) + bytes(range(16)))
    g.tensor("q8_0.weight", [32, 2], 8, (struct.pack("<e", 0.1) + bytes(range(32))) * 2)
    g.tensor("q4_K.weight", [256], 12, bytes(i % 251 for i in range(144)))
    g.tensor("q6_K.weight", [256], 14, bytes(i % 253 for i in range(210)))
    g.tensor("bf16.weight", [16], 30, b"\x80\x3f" * 16)


def gguf_seeds():
    # SentencePiece-style vocabulary (tokenizer.ggml.model = llama).
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += ["\u2581", "\u2581H", "ello", "\u2581w", "orld", "\u2581He", "llo", "!"]
    g = Gguf()
    llama_metadata(g, len(tokens))
    g.string("tokenizer.ggml.model", "llama")
    g.array("tokenizer.ggml.tokens", STR, None, tokens)
    g.array("tokenizer.ggml.scores", F32, "f", [-float(i) for i in range(len(tokens))])
    g.array("tokenizer.ggml.token_type", I32, "i",
            [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259))
    g.u32("tokenizer.ggml.bos_token_id", 1)
    g.u32("tokenizer.ggml.eos_token_id", 2)
    g.u32("tokenizer.ggml.unknown_token_id", 0)
    g.boolean("tokenizer.ggml.add_bos_token", True)
    g.string("tokenizer.chat_template", open(os.path.join(DATA, "chat_templates", "chatml.jinja")).read())
    quant_tensors(g)
    write("gguf", "llama-spm.gguf", g.build())

    # Byte-level BPE (tokenizer.ggml.model = gpt2), SmolLM2's pre-tokenizer.
    byte_chars = [chr(c) for c in range(ord("!"), ord("~") + 1)] + ["\u0120", "\u010a"]
    merges = ["\u0120 w", "o r", "\u0120w or", "l d", "\u0120wor ld", "H e", "l l", "He ll", "Hell o"]
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + byte_chars
    tokens += ["\u0120w", "or", "\u0120wor", "ld", "\u0120world", "He", "ll", "Hell", "Hello"]
    g = Gguf()
    llama_metadata(g, len(tokens))
    g.string("tokenizer.ggml.model", "gpt2")
    g.string("tokenizer.ggml.pre", "smollm")
    g.array("tokenizer.ggml.tokens", STR, None, tokens)
    g.array("tokenizer.ggml.token_type", I32, "i", [3, 3, 3] + [1] * (len(tokens) - 3))
    g.array("tokenizer.ggml.merges", STR, None, merges)
    g.u32("tokenizer.ggml.bos_token_id", 1)
    g.u32("tokenizer.ggml.eos_token_id", 2)
    g.tensor("token_embd.weight", [32, len(tokens)], 8,
             (struct.pack("<e", 0.01) + bytes(range(32))) * len(tokens))
    write("gguf", "gpt2-bpe.gguf", g.build())


# --- tokenizer.json: the fixtures with the vocabulary cut to a few hundred ---
def trim_tokenizer(path, keep):
    tok = json.load(open(path, encoding="utf-8"))
    model = tok["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < keep}
    model["vocab"] = vocab
    merges = []
    for m in model.get("merges", []):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    model["merges"] = merges
    # At most 16 added tokens: byte-fallback vocabularies list all 256 bytes.
    tok["added_tokens"] = [t for t in tok.get("added_tokens", []) if t["id"] < keep][:16]
    return json.dumps(tok, ensure_ascii=False, separators=(",", ":"))


def tokenizer_seeds():
    write("tokenizer_json", "bytelevel-bpe.json",
          trim_tokenizer(os.path.join(DATA, "tokenizers", "bytelevel-bpe", "tokenizer.json"), 300))
    write("tokenizer_json", "spm-bpe-bytefallback.json",
          trim_tokenizer(os.path.join(DATA, "tokenizers", "spm-bpe-bytefallback", "tokenizer.json"), 300))
    write("tokenizer_json", "tiny-llama3.json",
          trim_tokenizer(os.path.join(DATA, "tiny-llama3", "tokenizer.json"), 300))


# --- requests: the first byte picks the message or endpoint --------------------
def request_seeds():
    from kvserve.v1 import inference_pb2 as pb
    g = pb.GenerateRequest(request_id="r1", text="Hello world")
    g.sampling.temperature = 0.7
    g.sampling.top_p = 0.9
    g.sampling.top_k = 40
    g.sampling.seed = 7
    g.stopping.max_new_tokens = 8
    g.stopping.stop.append("\n\n")
    g.sampling.min_p = 0.05
    g.sampling.min_new_tokens = 2
    write("request", "generate-text.bin", b"\0" + g.SerializeToString())
    g = pb.GenerateRequest(request_id="r2")
    g.token_ids.ids.extend([1, 2, 3, 4, 5])
    g.sampling.logprobs = 3
    g.sampling.repetition_penalty = 1.1
    g.stopping.stop_token_ids.extend([2])
    write("request", "generate-ids.bin", b"\0" + g.SerializeToString())
    c = pb.ChatRequest(request_id="c1")
    c.messages.add(role="system", content="Be brief.")
    c.messages.add(role="user", content="Hi!")
    c.tools_json = '[{"type": "function", "function": {"name": "f"}}]'
    c.stopping.max_new_tokens = 4
    write("request", "chat.bin", b"\1" + c.SerializeToString())


def openai_seeds():
    write("openai_request", "completion.json", "0" + json.dumps({
        "model": "tiny", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0.5,
        "top_p": 0.9, "n": 2, "stop": ["\n", "."], "seed": 3, "logprobs": 2,
        "presence_penalty": 0.5, "frequency_penalty": 0.1, "stream": True,
        "stream_options": {"include_usage": True}}))
    write("openai_request", "completion-ids.json", "0" + json.dumps({
        "prompt": [1, 2, 3], "max_tokens": 4, "echo": False, "user": "u"}))
    write("openai_request", "chat.json", "1" + json.dumps({
        "model": "tiny", "messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Hi"}],
        "max_completion_tokens": 8, "logprobs": True, "top_logprobs": 2, "stop": "\n",
        "stream": False, "n": 1}))
    write("openai_request", "chat-parts.json", "1" + json.dumps({
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "max_tokens": 2}))


if __name__ == "__main__":
    safetensors_seeds()
    gguf_seeds()
    tokenizer_seeds()
    openai_seeds()
    try:
        request_seeds()
    except ImportError as e:
        sys.exit(f"request seeds need the generated protos on PYTHONPATH: {e}")
