// How the split-KV ("flash decoding") decode kernel lays a warp over keys, as
// plain constexpr arithmetic that the host-side plan and the kernel share.
//
// A key (or value) row of one KV head is D elements = D·sizeof(T) bytes, read
// as 16-byte vectors: kLanesPerKey lanes read one row together, so one warp
// load covers kKeysPerRow keys. Each lane issues kRows such loads per tile
// (K and V both, before using either), so a warp has kRows · 2 · 16 bytes per
// lane in flight; a warp's tile is kTileKeys = kRows · kKeysPerRow keys, all
// inside one cache block (one block-table lookup per tile). The CTA's warps
// take the tiles of a split round-robin: kPassKeys keys per pass.
#pragma once

namespace kvserve::cuda::flash_decode {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
/// Splits of one sequence's keys (the fused merge's shared arrays).
inline constexpr int kMaxSplits = 256;
/// Query heads one CTA serves (a KV head's group, or a chunk of it).
inline constexpr int kMaxGroupTile = 8;

/// The group tile a group of `group` query heads per KV head runs with: 1, 4
/// or 8 (groups of 2-3 use 4, groups above 8 go in chunks of 8).
constexpr int GroupTile(int group) { return group <= 1 ? 1 : group <= 4 ? 4 : 8; }

struct Layout {
  int vec = 0;            // elements per 16-byte load
  int lanes_per_key = 0;  // lanes reading one row
  int keys_per_row = 0;   // keys one warp load covers
  int rows = 0;           // loads per lane per tile (of K, and of V)
  int tile_keys = 0;      // keys per warp tile (inside one block)
  int pass_keys = 0;      // keys per CTA pass (kWarps tiles)
  bool ok = false;        // the kernel serves this combination
};

/// The layout for elements of `elem_bytes` (2: bf16/f16), head dim `head_dim`,
/// KV block size `block_size` and group tile `group_tile`. `ok` is false
/// where a row is not a power-of-two number of lanes ≤ 32 (e.g. D = 96) or
/// the tile would not fit a block: those shapes take the reference kernel.
constexpr Layout MakeLayout(int elem_bytes, int head_dim, int block_size, int group_tile) {
  Layout l;
  if (elem_bytes <= 0 || 16 % elem_bytes != 0) return l;
  l.vec = 16 / elem_bytes;
  if (head_dim <= 0 || head_dim % l.vec != 0) return l;
  l.lanes_per_key = head_dim / l.vec;
  if (l.lanes_per_key > 32 || (l.lanes_per_key & (l.lanes_per_key - 1)) != 0) return l;
  l.keys_per_row = 32 / l.lanes_per_key;
  // Registers: a group of 8 holds twice the accumulators, so it loads half as much per tile.
  const int wanted_rows = group_tile >= 8 ? 2 : 4;
  l.tile_keys = wanted_rows * l.keys_per_row;
  if (l.tile_keys > block_size) l.tile_keys = block_size;
  if (l.tile_keys < l.keys_per_row || block_size % l.tile_keys != 0) return l;
  l.rows = l.tile_keys / l.keys_per_row;
  l.pass_keys = kWarps * l.tile_keys;
  l.ok = true;
  return l;
}

/// Whether the flash-decode kernel is compiled for this shape (bf16/f16 only,
/// head dims 64 and 128, block sizes 16 and 32); the rest takes the reference kernel.
constexpr bool Serves(int elem_bytes, int head_dim, int block_size) {
  return elem_bytes == 2 && (head_dim == 64 || head_dim == 128) &&
         (block_size == 16 || block_size == 32);
}

}  // namespace kvserve::cuda::flash_decode
