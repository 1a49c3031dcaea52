"""An independent reference for kvserve serving a GGUF file: the Llama
forward pass in NumPy (float64) over the weights as the `gguf` package
(llama.cpp's own Python reader) dequantizes them.

Nothing here shares code with kvserve. In particular the Q/K rows are used as
GGUF stores them, with the RoPE pairing llama.cpp uses for the architecture
(adjacent pairs for `llama`, halves for `qwen2`), so kvserve's un-permuting of
the rows is checked, not assumed.
"""
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


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
    def __init__(self, path):
        reader = GGUFReader(path)
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
        half = self.head_dim // 2
        inv_freq = self.rope_base ** (-np.arange(half, dtype=np.float64) * 2.0 / self.head_dim)
        self.inv_freq = inv_freq

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
            q = h @ w[p + "attn_q.weight"].T
            k = h @ w[p + "attn_k.weight"].T
            v = h @ w[p + "attn_v.weight"].T
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
            x = x + attn @ w[p + "attn_output.weight"].T
            h = self._rms(x, w[p + "ffn_norm.weight"])
            gate = h @ w[p + "ffn_gate.weight"].T
            up = h @ w[p + "ffn_up.weight"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
        return self._rms(x, w["output_norm.weight"]) @ w["output.weight"].T

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
