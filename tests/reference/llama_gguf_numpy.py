"""An independent reference for kvserve serving a GGUF file: the Llama
forward pass in NumPy (float64) over the weights as the `gguf` package
(llama.cpp's own Python reader) dequantizes them.

Nothing here shares code with kvserve. In particular the Q/K rows are used as
GGUF stores them, with the RoPE pairing llama.cpp uses for the architecture
(adjacent pairs for `llama`, halves for `qwen2`), so kvserve's un-permuting of
the rows is checked, not assumed.

With round_activations, every product with a block-format weight first
rounds its input rows as ggml does before an integer dot product (and as
kvserve's CPU backend does by default, docs/quantized_weights.md): Q8_0
blocks of 32 as ggml's x86 code makes them (scale max|x|/127 kept as
float16, x · 127/max|x| rounded half to even)
for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 weights; Q8_K blocks of 256 (scale max/-127
of the signed extreme, round half to even, at most 127) for the K-quants;
and to bfloat16 (round to nearest even) for BF16 weights, as llama.cpp does
on CPUs with AVX512_BF16 (kvserve keeps float32 there: bf16_activations=False).
"""
import numpy as np
from gguf import GGMLQuantizationType, GGUFReader
from gguf.quants import dequantize

_Q8_0_ACTIVATIONS = {GGMLQuantizationType.Q8_0, GGMLQuantizationType.Q4_0,
                     GGMLQuantizationType.Q4_1, GGMLQuantizationType.Q5_0,
                     GGMLQuantizationType.Q5_1}
_Q8_K_ACTIVATIONS = {GGMLQuantizationType.Q2_K, GGMLQuantizationType.Q3_K,
                     GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q5_K,
                     GGMLQuantizationType.Q6_K}


def round_bf16(x):
    """float32 → bfloat16, round to nearest even (values as float64)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def round_q8_0(x):
    """ggml's x86 quantize_row_q8_0 then dequantized: rows of x in 32-blocks,
    q = round-half-even(x · 127 / max|x|), scale max|x| / 127 as float16."""
    b = np.asarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(b).max(axis=1, keepdims=True)
    d = amax / np.float32(127)
    inverse = np.where(amax != 0, np.float32(127) / np.where(amax != 0, amax, 1), 0).astype(np.float32)
    q = np.rint(b * inverse)  # halves to even, as _mm256_round_ps(_MM_ROUND_NEAREST)
    return (q * d.astype(np.float16).astype(np.float64)).reshape(np.shape(x))


def round_q8_k(x):
    """ggml's quantize_row_q8_K_ref then dequantized: rows of x in 256-blocks."""
    b = np.asarray(x, dtype=np.float32).reshape(-1, 256)
    index = np.abs(b).argmax(axis=1)
    extreme = b[np.arange(b.shape[0]), index][:, None]
    safe = np.where(extreme != 0, extreme, 1).astype(np.float32)
    iscale = np.float32(-127) / safe
    q = np.minimum(127, np.rint(iscale * b))  # rint: halves to even, as ggml's nearest_int
    d = (np.float32(1) / iscale).astype(np.float64)
    return np.where(extreme != 0, q * d, 0).reshape(np.shape(x))


def _field(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    value = field.parts[field.data[0]]
    if field.types and field.types[0].name == "STRING":
        return bytes(value).decode("utf-8")
    return value.tolist()[0] if len(value) == 1 else value.tolist()


def _strings(reader, key):
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8", errors="replace") for i in field.data]


class LlamaGgufReference:
    def __init__(self, path, round_activations=False, bf16_activations=True):
        reader = GGUFReader(path)
        self.round_activations = round_activations
        # llama.cpp rounds x to bf16 for BF16 weights on AVX512_BF16 CPUs;
        # kvserve keeps float32 (False).
        self.bf16_activations = bf16_activations
        self.types = {t.name: t.tensor_type for t in reader.tensors}
        self.arch = _field(reader, "general.architecture")
        a = self.arch
        self.n_layer = _field(reader, f"{a}.block_count")
        self.n_embd = _field(reader, f"{a}.embedding_length")
        self.n_head = _field(reader, f"{a}.attention.head_count")
        self.n_head_kv = _field(reader, f"{a}.attention.head_count_kv", self.n_head)
        self.head_dim = self.n_embd // self.n_head
        self.eps = _field(reader, f"{a}.attention.layer_norm_rms_epsilon")
        self.rope_base = _field(reader, f"{a}.rope.freq_base", 10000.0)
        self.chat_template = _field(reader, "tokenizer.chat_template")
        self.tokens = _strings(reader, "tokenizer.ggml.tokens")
        self.bos_id = _field(reader, "tokenizer.ggml.bos_token_id")
        self.eos_id = _field(reader, "tokenizer.ggml.eos_token_id")
        self.w = {}
        for t in reader.tensors:
            values = dequantize(t.data, t.tensor_type)
            shape = [int(d) for d in reversed(t.shape.tolist())]
            self.w[t.name] = np.asarray(values, dtype=np.float64).reshape(shape)
        if "output.weight" not in self.w:  # tied embeddings
            self.w["output.weight"] = self.w["token_embd.weight"]
            self.types["output.weight"] = self.types["token_embd.weight"]
        half = self.head_dim // 2
        inv_freq = self.rope_base ** (-np.arange(half, dtype=np.float64) * 2.0 / self.head_dim)
        self.inv_freq = inv_freq

    def _mm(self, x, name):
        """x @ W[name]ᵀ, x rounded first as ggml rounds it for that weight's type."""
        if self.round_activations:
            if self.types[name] in _Q8_0_ACTIVATIONS:
                x = round_q8_0(x)
            elif self.types[name] in _Q8_K_ACTIVATIONS:
                x = round_q8_k(x)
            elif self.types[name] == GGMLQuantizationType.BF16 and self.bf16_activations:
                x = round_bf16(x)
        return x @ self.w[name].T

    def _rms(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def _rope(self, x, positions):
        # x: [n, heads, d]
        angles = positions[:, None] * self.inv_freq[None, :]  # [n, d/2]
        cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
        out = np.empty_like(x)
        if self.arch == "llama":  # adjacent pairs (llama.cpp's "normal" RoPE)
            x0, x1 = x[..., 0::2], x[..., 1::2]
            out[..., 0::2] = x0 * cos - x1 * sin
            out[..., 1::2] = x0 * sin + x1 * cos
        else:  # halves ("neox" RoPE: qwen2)
            h = self.head_dim // 2
            x0, x1 = x[..., :h], x[..., h:]
            out[..., :h] = x0 * cos - x1 * sin
            out[..., h:] = x0 * sin + x1 * cos
        return out

    def new_cache(self):
        return [([], []) for _ in range(self.n_layer)]

    def forward(self, ids, cache, start):
        """Logits [n, vocab] for `ids` at positions start.., extending `cache`."""
        w, d = self.w, self.head_dim
        n = len(ids)
        positions = np.arange(start, start + n, dtype=np.float64)
        x = w["token_embd.weight"][np.asarray(ids)]
        group = self.n_head // self.n_head_kv
        for layer in range(self.n_layer):
            p = f"blk.{layer}."
            h = self._rms(x, w[p + "attn_norm.weight"])
            q = self._mm(h, p + "attn_q.weight")
            k = self._mm(h, p + "attn_k.weight")
            v = self._mm(h, p + "attn_v.weight")
            if p + "attn_q.bias" in w:
                q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
            q = self._rope(q.reshape(n, self.n_head, d), positions)
            k = self._rope(k.reshape(n, self.n_head_kv, d), positions)
            v = v.reshape(n, self.n_head_kv, d)
            keys, values = cache[layer]
            keys.append(k)
            values.append(v)
            K, V = np.concatenate(keys), np.concatenate(values)  # [ctx, hkv, d]
            ctx = K.shape[0]
            K, V = np.repeat(K, group, axis=1), np.repeat(V, group, axis=1)
            scores = np.einsum("qhd,khd->hqk", q, K) / np.sqrt(d)
            mask = np.arange(ctx)[None, :] > (start + np.arange(n))[:, None]
            scores = np.where(mask[None], -np.inf, scores)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            attn = np.einsum("hqk,khd->qhd", probs, V).reshape(n, self.n_head * d)
            x = x + self._mm(attn, p + "attn_output.weight")
            h = self._rms(x, w[p + "ffn_norm.weight"])
            gate = self._mm(h, p + "ffn_gate.weight")
            up = self._mm(h, p + "ffn_up.weight")
            x = x + self._mm(gate / (1.0 + np.exp(-gate)) * up, p + "ffn_down.weight")
        return self._mm(self._rms(x, w["output_norm.weight"]), "output.weight")

    def greedy(self, prompt, steps):
        """`steps` greedy tokens, and each step's margin (top-1 minus top-2 logit)."""
        cache = self.new_cache()
        logits = self.forward(prompt, cache, 0)[-1]
        out, margins = [], []
        for _ in range(steps):
            top2 = np.argsort(logits)[-2:]
            margins.append(float(logits[top2[1]] - logits[top2[0]]))
            token = int(top2[1])
            out.append(token)
            logits = self.forward([token], cache, len(prompt) + len(out) - 1)[-1]
        return out, margins
