// Bounded expansion in the GPU dialects (expansionBudget in c.ts) on hand-written bodies:
// what counts against the budget, braces only where a copy declares something, and
// register promotion falling back to an array when a loop that indexes the buffer is no
// longer expanded. The C dialect's side of the same bodies shows what it keeps doing.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { add, f32, int, load, mul, v } from '../ir/expr';
import { placeholder } from '../ir/tensor';
import { C_DIALECT, GPU_EXPANSION_BUDGET, renderBody, type Dialect } from './c';
import { CUDA_DIALECT } from './cuda';
import type { Stmt } from './lower';
import { OPENCL_DIALECT } from './opencl';

const x = placeholder('x', [4096]);
const acc = placeholder('acc', [4]);

const loop = (name: string, extent: number, kind: 'unroll' | 'serial', body: Stmt[]): Stmt => ({ k: 'for', v: name, extent, kind, owner: 's', body });
const text = (body: Stmt[], dialect: Dialect = OPENCL_DIALECT): string => renderBody(body, 4, dialect, '').join('\n');

/** acc[i] += x[i * n + j] for i < 4 (unrolled), j < n (unrolled), then out[i] = acc[i]. */
function accumulate(n: number): Stmt[] {
  return [
    { k: 'alloc', buf: 'acc', size: 4 },
    loop('i', 4, 'unroll', [
      { k: 'store', buf: 'acc', index: v('i'), value: f32(0) },
      loop('j', n, 'unroll', [{ k: 'store', buf: 'acc', index: v('i'), value: add(load(acc, [v('i')]), load(x, [add(mul(v('i'), n), v('j'))])) }]),
    ]),
    loop('o', 4, 'unroll', [{ k: 'store', buf: 'out', index: v('o'), value: load(acc, [v('o')]) }]),
  ];
}

test('the GPU dialects bound expansion at GPU_EXPANSION_BUDGET statements and copy without braces where nothing is declared', () => {
  assert.is(OPENCL_DIALECT.expansionBudget, GPU_EXPANSION_BUDGET);
  assert.is(CUDA_DIALECT.expansionBudget, GPU_EXPANSION_BUDGET);
  assert.not.ok('expansionBudget' in C_DIALECT, 'CPU: unchanged rules (the CPU dialect has no budget)');
  // 4 x (1 + 100) statements: expanded, every index constant, acc promoted to scalars.
  const small = text(accumulate(100));
  assert.not.match(small, /#pragma unroll|for \(/);
  assert.match(small, /^float acc_s0, acc_s1, acc_s2, acc_s3;$/m);
  assert.match(small, /^acc_s3 = \(acc_s3 \+ x\[399\]\);$/m, 'no braces around the copies, no indentation');
  assert.not.match(small, /^\s*\{$/m);
  // The C dialect expands the same body with one scope per copy (two levels here).
  assert.match(text(accumulate(100), C_DIALECT), /^ {4}acc_s3 = \(acc_s3 \+ x\[399\]\);$/m);
});

test('a loop whose expansion is over the budget stays a loop under the unroll pragma; a buffer it indexes stays an array', () => {
  // 4 x (1 + 200) > 512: the i loop stays, the j loops inside it are expanded.
  const src = text(accumulate(200));
  assert.match(src, /^#pragma unroll 4\nfor \(int32_t i = 0; i < 4; \+\+i\) \{$/m);
  assert.match(src, /^float acc\[4\] __attribute__\(\(aligned\(64\)\)\);$/m, 'acc[i] is no constant index: no promotion');
  assert.match(src, /^ {2}acc\[i\] = \(acc\[i\] \+ x\[\(\(i \* 200\) \+ 199\)\]\);$/m);
  assert.not.match(src, /acc_s\d/);
  assert.match(src, /^out\[3\] = acc\[3\];$/m, 'the loop that fits is still expanded');
  assert.match(text(accumulate(200), CUDA_DIALECT), /^#pragma unroll 4\nfor \(int32_t i = 0;/m);
});

test('thread scopes count with their bodies (C counts them as one statement); a copy that declares keeps its braces', () => {
  // A vthread-like unrolled loop of 4 around a thread scope of 200 stores.
  const body: Stmt[] = [loop('vt', 4, 'unroll', [{
    k: 'thread', v: 'tx', tag: 'threadIdx.x', body: [
      { k: 'alloc', buf: 'acc', size: 4 },
      loop('j', 200, 'unroll', [{ k: 'store', buf: 'acc', index: int(0), value: add(load(acc, [int(0)]), load(x, [add(mul(v('tx'), 200), v('j'))])) }]),
      { k: 'store', buf: 'out', index: add(mul(v('vt'), 64), v('tx')), value: load(acc, [int(0)]) },
    ],
  }])];
  const gpu = text(body);
  assert.match(gpu, /^#pragma unroll 4\nfor \(int32_t vt = 0; vt < 4; \+\+vt\) \{$/m);
  assert.is((gpu.match(/get_local_id/g) ?? []).length, 1);
  assert.match(gpu, /float acc_s0, acc_s1, acc_s2, acc_s3;/, 'the tile inside the scope still has constant indices');
  const unbounded = text(body, { ...OPENCL_DIALECT, expansionBudget: undefined });
  assert.is((unbounded.match(/get_local_id/g) ?? []).length, 4, 'counted as one statement, the scope was copied 4 times');
  // Expanded copies whose body declares (the alloc) are scopes of their own.
  const fits: Stmt[] = [loop('vt', 2, 'unroll', [{ k: 'alloc', buf: 'acc', size: 4 }, { k: 'store', buf: 'acc', index: int(0), value: f32(1) }, { k: 'store', buf: 'out', index: v('vt'), value: load(acc, [int(0)]) }])];
  assert.is((text(fits).match(/^\{$/gm) ?? []).length, 2);
});

test.run();
