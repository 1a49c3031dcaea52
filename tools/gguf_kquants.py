"""NumPy writers of ggml's K-quant blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), which the `gguf`
package reads but cannot write. Simple rounding, not llama.cpp's searched
scales: they make valid files of these formats from float weights for tests
and benchmarks (the values are what the file holds; both engines read the
same bytes). tools/write_random_gguf.py checks each tensor against gguf-py's
own dequantization.

Layouts (ggml-common.h): Q2_K {u8 scales[16], u8 qs[64], f16 d, f16 dmin}, Q3_K
{u8 hmask[32], u8 qs[64], u8 scales[12], f16 d}, Q4_K {f16 d, f16 dmin, u8 scales[12], u8 qs[128]},
Q5_K {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]}, Q6_K {u8 ql[128],
u8 qh[64], i8 scales[16], f16 d}; 256 weights each."""
import numpy as np


def _pack_scales_mins(ls, lm):
    """8 six-bit scales and mins per block → ggml's 12 packed bytes."""
    n = ls.shape[0]
    out = np.zeros((n, 12), dtype=np.uint8)
    out[:, 0:4] = ls[:, 0:4]
    out[:, 4:8] = lm[:, 0:4]
    out[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    out[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    out[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    return out


def _scale_min_blocks(x, levels):
    """x: [n, 8, 32] → codes [n, 8, 32] in 0..levels, d, dmin [n], ls, lm [n, 8] (6-bit)."""
    lo = np.minimum(x.min(axis=2), 0.0)
    hi = x.max(axis=2)
    scale = (hi - lo) / levels
    m = -lo
    d = scale.max(axis=1) / 63.0
    dmin = m.max(axis=1) / 63.0
    d16 = d.astype(np.float16).astype(np.float32)
    dmin16 = dmin.astype(np.float16).astype(np.float32)
    safe_d = np.where(d16 > 0, d16, 1.0)[:, None]
    safe_dmin = np.where(dmin16 > 0, dmin16, 1.0)[:, None]
    ls = np.clip(np.rint(scale / safe_d), 0, 63).astype(np.uint8)
    lm = np.clip(np.rint(m / safe_dmin), 0, 63).astype(np.uint8)
    step = d16[:, None] * ls
    offset = dmin16[:, None] * lm
    safe_step = np.where(step > 0, step, 1.0)[:, :, None]
    q = np.clip(np.rint((x + offset[:, :, None]) / safe_step), 0, levels).astype(np.uint8)
    q = np.where(step[:, :, None] > 0, q, 0).astype(np.uint8)
    return q, d16.astype(np.float16), dmin16.astype(np.float16), ls, lm


def quantize_q4_k(values):
    x = values.reshape(-1, 8, 32).astype(np.float32)
    q, d, dmin, ls, lm = _scale_min_blocks(x, 15)
    n = x.shape[0]
    q = q.reshape(n, 4, 2, 32)
    qs = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).reshape(n, 128)
    out = np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                          _pack_scales_mins(ls, lm), qs], axis=1)
    return out.reshape(values.shape[:-1] + (values.shape[-1] // 256 * 144,))


def quantize_q5_k(values):
    x = values.reshape(-1, 8, 32).astype(np.float32)
    q, d, dmin, ls, lm = _scale_min_blocks(x, 31)
    n = x.shape[0]
    q = q.reshape(n, 4, 2, 32)
    qs = ((q[:, :, 0, :] & 0xF) | ((q[:, :, 1, :] & 0xF) << 4)).reshape(n, 128)
    qh = np.zeros((n, 32), dtype=np.uint8)
    for c in range(4):
        qh |= ((q[:, c, 0, :] >> 4) << (2 * c)).astype(np.uint8)
        qh |= ((q[:, c, 1, :] >> 4) << (2 * c + 1)).astype(np.uint8)
    out = np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                          _pack_scales_mins(ls, lm), qh, qs], axis=1)
    return out.reshape(values.shape[:-1] + (values.shape[-1] // 256 * 176,))


def quantize_q6_k(values):
    x = values.reshape(-1, 16, 16).astype(np.float32)
    n = x.shape[0]
    amax_index = np.abs(x).argmax(axis=2)
    max_signed = np.take_along_axis(x, amax_index[:, :, None], axis=2)[:, :, 0]
    scale = max_signed / -32.0  # the value of largest magnitude becomes code -32
    d = np.abs(scale).max(axis=1) / 127.0
    d16 = d.astype(np.float16).astype(np.float32)
    safe_d = np.where(d16 > 0, d16, 1.0)[:, None]
    sc = np.clip(np.rint(scale / safe_d), -128, 127).astype(np.int8)
    step = d16[:, None] * sc
    safe_step = np.where(step != 0, step, 1.0)[:, :, None]
    q = np.clip(np.rint(x / safe_step), -32, 31)
    q = np.where(step[:, :, None] != 0, q, 0).astype(np.int16) + 32
    q = q.astype(np.uint8).reshape(n, 2, 4, 32)  # [block, half, quarter, l]
    ql = np.concatenate([(q[:, :, 0] & 0xF) | ((q[:, :, 2] & 0xF) << 4),
                         (q[:, :, 1] & 0xF) | ((q[:, :, 3] & 0xF) << 4)], axis=2).reshape(n, 128)
    qh = ((q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) |
          ((q[:, :, 3] >> 4) << 6)).astype(np.uint8).reshape(n, 64)
    out = np.concatenate([ql, qh, sc.view(np.uint8), d16.astype(np.float16).view(np.uint8).reshape(n, 2)],
                         axis=1)
    return out.reshape(values.shape[:-1] + (values.shape[-1] // 256 * 210,))


def _pack_2bit_planes(u):
    """Codes [n, 256] (0-3 in the low two bits) → Q2_K / Q3_K qs [n, 64]: per
    128 weights, 32 bytes whose bit pair 2p holds weights 32p .. 32p + 31."""
    n = u.shape[0]
    u = (u & 3).reshape(n, 2, 4, 32)
    qs = u[:, :, 0] | (u[:, :, 1] << 2) | (u[:, :, 2] << 4) | (u[:, :, 3] << 6)
    return qs.astype(np.uint8).reshape(n, 64)


def quantize_q3_k(values):
    """Codes −4..3 per 16 weights with a signed 6-bit scale (the value of
    largest magnitude becomes −4), stored as u = code + 4: two low bits in
    qs, the third in hmask."""
    x = values.reshape(-1, 16, 16).astype(np.float32)
    n = x.shape[0]
    amax_index = np.abs(x).argmax(axis=2)
    max_signed = np.take_along_axis(x, amax_index[:, :, None], axis=2)[:, :, 0]
    scale = max_signed / -4.0
    d = np.abs(scale).max(axis=1) / 31.0
    d16 = d.astype(np.float16).astype(np.float32)
    safe_d = np.where(d16 > 0, d16, 1.0)[:, None]
    sc = np.clip(np.rint(scale / safe_d), -32, 31).astype(np.int16)
    step = d16[:, None] * sc
    safe_step = np.where(step != 0, step, 1.0)[:, :, None]
    q = np.clip(np.rint(x / safe_step), -4, 3)
    u = (np.where(step[:, :, None] != 0, q, 0) + 4).astype(np.uint8).reshape(n, 256)
    hbits = (u >> 2).reshape(n, 8, 32)  # [block, 4·half + plane, l]
    hmask = np.zeros((n, 32), dtype=np.uint8)
    for bit in range(8):
        hmask |= (hbits[:, bit] << bit).astype(np.uint8)
    s6 = (sc + 32).astype(np.uint8)  # 0..63
    scales = np.zeros((n, 12), dtype=np.uint8)
    scales[:, 0:8] = (s6[:, 0:8] & 0xF) | ((s6[:, 8:16] & 0xF) << 4)
    for j in range(16):
        scales[:, 8 + j % 4] |= ((s6[:, j] >> 4) << (2 * (j // 4))).astype(np.uint8)
    out = np.concatenate([hmask, _pack_2bit_planes(u), scales,
                          d16.astype(np.float16).view(np.uint8).reshape(n, 2)], axis=1)
    return out.reshape(values.shape[:-1] + (values.shape[-1] // 256 * 110,))


def quantize_q2_k(values):
    """Codes 0..3 per 16 weights with a 4-bit scale and minimum each."""
    x = values.reshape(-1, 16, 16).astype(np.float32)
    n = x.shape[0]
    lo = np.minimum(x.min(axis=2), 0.0)
    scale = (x.max(axis=2) - lo) / 3
    m = -lo
    d16 = (scale.max(axis=1) / 15.0).astype(np.float16).astype(np.float32)
    dmin16 = (m.max(axis=1) / 15.0).astype(np.float16).astype(np.float32)
    ls = np.clip(np.rint(scale / np.where(d16 > 0, d16, 1.0)[:, None]), 0, 15).astype(np.uint8)
    lm = np.clip(np.rint(m / np.where(dmin16 > 0, dmin16, 1.0)[:, None]), 0, 15).astype(np.uint8)
    step = d16[:, None] * ls
    offset = dmin16[:, None] * lm
    q = np.clip(np.rint((x + offset[:, :, None]) / np.where(step > 0, step, 1.0)[:, :, None]), 0, 3)
    u = np.where(step[:, :, None] > 0, q, 0).astype(np.uint8).reshape(n, 256)
    out = np.concatenate([ls | (lm << 4), _pack_2bit_planes(u),
                          d16.astype(np.float16).view(np.uint8).reshape(n, 2),
                          dmin16.astype(np.float16).view(np.uint8).reshape(n, 2)], axis=1)
    return out.reshape(values.shape[:-1] + (values.shape[-1] // 256 * 84,))
