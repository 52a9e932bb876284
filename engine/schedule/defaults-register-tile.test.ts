// DefaultOptions.registerTile (bench/register-tiles.ts): the default schedule with a register
// tile asked for in place of the one the shape chooses. The split lengths follow the request
// and the kernel still gives the reference's values, partial tiles included.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runKernel } from '../codegen/run-c';
import { lower } from '../codegen/lower';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder } from '../ir/tensor';
import { uniform } from '../runtime/random';
import { batchMatmul } from '../topi/nn';
import { defaultSchedule } from './defaults';
import type { DefaultOptions } from './default-options';
import { State } from './state';

const lanes = 16;
const a = placeholder('p0', [2, 37, 24]), b = placeholder('p1', [2, 24, 41]);
const out = batchMatmul(a, b, { transB: false });
const dag = new ComputeDAG([out]);
const data = [a, b].map((t, i) => uniform(t.shape.reduce((x, y) => x * y, 1), 3, i));
const want = evaluate(dag, new Map([a, b].map((t, i) => [t, data[i]]))).get(out.name) as Float32Array;

const splits = (opts: DefaultOptions): number[] => defaultSchedule(dag, opts).flatMap((s) => (s.s === 'split' ? [s.lengths[0]] : []));

function agrees(opts: DefaultOptions): void {
  const [got] = runKernel(lower(State.replay(dag, defaultSchedule(dag, opts)), 'k'), data, undefined, { vectorLanes: lanes });
  want.forEach((w, i) => { if (!(Math.abs(got[i] - w) <= 1e-4 * Math.abs(w) + 1e-5)) assert.unreachable(`${i}: ${got[i]} vs ${w}`); });
}

test('a register tile asked for replaces the chosen one: columns and rows as given', () => {
  assert.equal(splits({ vectorLanes: lanes, registerTile: { vec: 16, rows: 5 } }).slice(0, 2), [16, 5]);
  assert.equal(splits({ vectorLanes: lanes, registerTile: { rows: 3 } })[1], 3, 'rows alone: the chosen columns kept');
  assert.not.equal(splits({ vectorLanes: lanes }).slice(0, 2), [16, 5], 'the request is what changed the tile');
});

test('kernels with the asked-for tiles (partial in both axes) give the reference values', () => {
  agrees({ vectorLanes: lanes, registerTile: { vec: 16, rows: 5 } });
  agrees({ vectorLanes: lanes, registerTile: { vec: 32, rows: 3 } });
});

test.run();
