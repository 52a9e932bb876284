// ONNX GridSample as the `grid_sample` op (topi/grid-sample.ts), which computes the
// sampling positions from the grid in the kernel (the grid is data, not a constant):
//  - opset 16: mode bilinear (default), nearest or bicubic; 4-D input [N, C, H, W] with a
//    grid [N, H_out, W_out, 2];
//  - opsets 20 and 22: mode linear (default), nearest or cubic; also 5-D input
//    [N, C, D, H, W] with a grid [N, D_out, H_out, W_out, 3];
//  - padding_mode zeros (default), border or reflection; align_corners 0 (default) or 1;
//  - float data and grid (float16 and double run as float32).
// The op reads both inputs in the model's layout (NCHW / NCDHW): the layout pass gives it
// that layout back when its input comes from a conv run channels last.

import { UnsupportedError, type Converter, type NodeView, type Value } from './context';
import type { GridSampleMode, GridSamplePadding } from '../../topi/grid-sample';

const MODES_16: Readonly<Record<string, GridSampleMode>> = { bilinear: 'linear', nearest: 'nearest', bicubic: 'cubic' };
const MODES_20: Readonly<Record<string, GridSampleMode>> = { linear: 'linear', nearest: 'nearest', cubic: 'cubic' };
const PADDINGS: readonly GridSamplePadding[] = ['zeros', 'border', 'reflection'];

function convertGridSample(n: NodeView): (Value | undefined)[] {
  if (n.opset < 16) throw new Error(`GridSample is defined from opset 16 (this model's opset is ${n.opset})`);
  const modes = n.opset >= 20 ? MODES_20 : MODES_16;
  const modeName = n.attr.string('mode', n.opset >= 20 ? 'linear' : 'bilinear');
  const mode = Object.hasOwn(modes, modeName) ? modes[modeName] : undefined;
  if (!mode) throw new Error(`mode '${modeName}' (opset ${n.opset}: ${Object.keys(modes).join(', ')})`);
  const padding = n.attr.string('padding_mode', 'zeros');
  if (!(PADDINGS as readonly string[]).includes(padding)) throw new Error(`padding_mode '${padding}' (${PADDINGS.join(', ')})`);
  const alignCorners = n.attr.int('align_corners', 0);
  if (alignCorners !== 0 && alignCorners !== 1) throw new Error(`align_corners ${alignCorners} (0 or 1)`);

  for (const [i, what] of [[0, 'X'], [1, 'grid']] as const) {
    const t = n.dtype(i);
    if (t !== 'float32') throw new UnsupportedError(`${what} of type ${t} (float only)`);
  }
  const x = n.shape(0), grid = n.shape(1);
  const rank = x.length;
  if (n.opset < 20 && rank !== 4) throw new Error(`X of rank ${rank} (opset ${n.opset} takes 4-D X [N, C, H, W]; 5-D from opset 20)`);
  if (rank !== 4 && rank !== 5) throw new UnsupportedError(`X of rank ${rank} (4-D [N, C, H, W] or 5-D [N, C, D, H, W])`);
  const r = rank - 2;
  if (grid.length !== rank || grid[0] !== x[0] || grid[rank - 1] !== r) {
    throw new Error(`grid [${grid.join(', ')}] for X [${x.join(', ')}] (expected [${x[0]}, ${rank === 4 ? 'H_out, W_out' : 'D_out, H_out, W_out'}, ${r}])`);
  }
  const out = [x[0], x[1], ...grid.slice(1, rank - 1)];
  if (out.some((d) => d < 1) || x.some((d) => d < 1)) throw new UnsupportedError(`an empty X or output (X [${x.join(', ')}], output [${out.join(', ')}])`);
  return [n.op('grid_sample', [n.node(0), n.node(1)], { mode, padding, alignCorners: alignCorners === 1 })];
}

export const gridSample: Converter = { attrs: ['mode', 'padding_mode', 'align_corners'], convert: convertGridSample };
