// A register tile over rows x columns where neither extent divides (ViT's 197 x 197 attention
// scores, 14 rows x 16 columns a tile) takes whole vectors, the last tile partial: the tile
// guards are versioned (at the outer loop, and one loop in for what is left inside a copy),
// and the whole tiles' accumulators live in vector registers (the tail's copy has buffers of
// its own). The kernel still equals the reference.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder } from '../ir/tensor';
import { defaultSchedule } from '../schedule/defaults';
import { State } from '../schedule/state';
import { batchMatmul } from '../topi/nn';
import { uniform } from '../runtime/random';
import { runKernel } from './run-c';
import { renderKernel } from './c';
import { lower } from './lower';

test('batch_matmul 2x197x64 by 2x64x197: whole tiles vectorised in registers, tails guarded; same values as the reference', () => {
  const a = placeholder('p0', [2, 197, 64]), b = placeholder('p1', [2, 64, 197]);
  const out = batchMatmul(a, b, { transB: false });
  const dag = new ComputeDAG([out]);
  const kernel = lower(State.replay(dag, defaultSchedule(dag, { vectorLanes: 16 })), 'k');
  const source = renderKernel(kernel, { vectorLanes: 16 });
  assert.match(source, /tt_v16 T_batch_matmul_NN_local_v0/, 'the whole tiles keep their accumulators in vector variables');
  assert.match(source, /T_batch_matmul_NN_local_tail/, 'the tail has a buffer of its own');
  const inputs = [uniform(2 * 197 * 64, 1, 0), uniform(2 * 64 * 197, 1, 1)];
  const want = evaluate(dag, new Map([[a, inputs[0]], [b, inputs[1]]])).get(out.name) as Float32Array;
  const got = runKernel(kernel, inputs, undefined, { vectorLanes: 16 });
  want.forEach((w, i) => { if (!(Math.abs(got[0][i] - w) <= 1e-4 * Math.abs(w) + 1e-5)) assert.unreachable(`${i}: ${got[0][i]} vs ${w}`); });
});

test.run();
