// ViT-S/16 (timm's vit_small_patch16_224): a 16x16 stride-16 conv embeds 14x14 patches of
// a 224 image into 384 channels, a class token is prepended (Expand + Concat in the ONNX
// form) and a position embedding [1, 197, 384] added; 12 pre-norm blocks (LayerNorm, one
// fused qkv linear layer to 1152 whose parts are q, k, v of 6 heads of 64 (one Split in the
// ONNX form; q and v read in place, k^T copied),
// scores * 1/8, softmax, output projection + residual; LayerNorm, MLP 384 -> 1536 -> 384
// with GELU as erf, residual; eps 1e-6); the final LayerNorm, the class token's 384 values,
// the head dense to 1000 + bias, softmax. 22,050,664 weights.

import type { NetBuilder } from './builder';
import { attention, gelu, layerNorm, linear, param } from './bert';
import { xavierWeight } from './init';

export interface VitConfig {
  readonly patch: number;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly mlp: number;
  readonly classes: number;
}

export const VIT_S16: VitConfig = { patch: 16, hidden: 384, layers: 12, heads: 6, mlp: 1536, classes: 1000 };

const LN_EPS = 1e-6;

export function vit(b: NetBuilder, cfg: VitConfig = VIT_S16): number {
  const g = b.graph;
  const B = b.opts.batch, C = cfg.hidden;
  const grid = Math.floor(b.opts.imageSize / cfg.patch), tokens = grid * grid + 1;
  // Patch embedding: conv + bias, then [B, grid*grid, C] tokens (NCHW: flatten + transpose, as exported).
  let x = b.conv2d(b.input(), 'patch_embed_proj', { channels: C, kernel: [cfg.patch, cfg.patch], strides: [cfg.patch, cfg.patch] });
  x = b.bias(x, 'patch_embed_proj_bias');
  x = b.layout === 'NHWC'
    ? g.op('reshape', [x], { newShape: [B, grid * grid, C] })
    : g.op('transpose', [g.op('reshape', [x], { newShape: [B, C, grid * grid] })], { axes: [0, 2, 1] });
  const cls = param(b, 'cls_token', [1, 1, C], () => xavierWeight(b.opts.seed, 'cls_token', [1, C]));
  x = g.op('concatenate', [g.op('broadcast_to', [cls], { shape: [B, 1, C] }), x], { axis: 1 });
  x = g.op('add', [x, param(b, 'pos_embed', [1, tokens, C], () => xavierWeight(b.opts.seed, 'pos_embed', [tokens, C]))]);
  for (let l = 0; l < cfg.layers; l++) {
    const p = `blocks_${l}`;
    const qkv = linear(b, layerNorm(b, x, `${p}_norm1`, LN_EPS), `${p}_attn_qkv`, 3 * C);
    const ctx = attention(b, { q: qkv, k: qkv, v: qkv, offsets: [0, C, 2 * C] }, cfg.heads, `${p}_attn`, { multiply: (C / cfg.heads) ** -0.5 });
    x = g.op('add', [x, linear(b, ctx, `${p}_attn_proj`, C)]);
    const h = gelu(b, linear(b, layerNorm(b, x, `${p}_norm2`, LN_EPS), `${p}_mlp_fc1`, cfg.mlp), `${p}_mlp_gelu`);
    x = g.op('add', [x, linear(b, h, `${p}_mlp_fc2`, C)]);
  }
  x = layerNorm(b, x, 'norm', LN_EPS);
  // The class token: x[:, 0] (a Gather of index 0 on the token axis in the ONNX form).
  const token = g.op('take', [x, g.constant('cls_index', [], Int32Array.of(0))], { axis: 1 }, 'cls_token_out');
  return b.softmax(linear(b, token, 'head', cfg.classes));
}
