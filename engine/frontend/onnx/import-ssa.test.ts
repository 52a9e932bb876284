// ONNX values are defined once: a second definition (by a node, an initializer, in a branch)
// stops the import with one line naming the value, from the command line too; a branch
// initializer may shadow an outer value only inside its branch.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../cli';
import { UserError } from '../../errors';
import { runGraph } from '../../graph/run';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { DataType } from './schema';

const ONCE = 'ONNX requires each value name to be defined once';
const TRUE = { name: 'c', dims: [], data_type: DataType.BOOL, int32_data: [1] };

function refusal(bytes: Uint8Array): string {
  try {
    importOnnx(bytes, 'm.onnx');
  } catch (e) {
    assert.instance(e, UserError);
    return (e as Error).message;
  }
  assert.unreachable('the model was accepted');
  return '';
}

const m = (): OnnxModelBuilder => new OnnxModelBuilder(13).input('x', [2]);
const ifNode = (b: OnnxModelBuilder, then: OnnxModelBuilder, out = 'y'): OnnxModelBuilder =>
  b.node('If', ['c'], [out], { then_branch: { graph: then.subgraph('then') }, else_branch: { graph: new OnnxModelBuilder(13).node('Neg', ['x'], ['e']).output('e').subgraph('else') } });

test('in the main graph: a graph output, an intermediate value, a graph input or an initializer written again', () => {
  assert.is(refusal(m().node('Relu', ['x'], ['y']).node('Neg', ['x'], ['y']).output('y').build()),
    `m.onnx: value 'y' is defined twice (again by Neg 'y'); ${ONCE}`);
  assert.is(refusal(m().node('Relu', ['x'], ['t']).node('Neg', ['x'], ['t'], {}, 'neg').node('Abs', ['t'], ['y']).output('y').build()),
    `m.onnx: value 't' is defined twice (again by Neg 'neg'); ${ONCE}`);
  assert.is(refusal(m().node('Relu', ['x'], ['x'], {}, 'r').output('x').build()), `m.onnx: value 'x' is defined twice (again by Relu 'r'); ${ONCE}`);
  assert.is(refusal(m().float('w', [2], [1, 2]).node('Add', ['x', 'w'], ['w'], {}, 'add').output('w').build()),
    `m.onnx: value 'w' is defined twice (again by Add 'add'); ${ONCE}`);
  assert.is(refusal(m().float('w', [2], [1, 2]).float('w', [2], [3, 4]).node('Add', ['x', 'w'], ['y']).output('y').build()),
    `m.onnx: value 'w' is defined twice (again by a second initializer 'w'); ${ONCE}`);
  assert.is(refusal(m().node('Split', ['x'], ['a', 'a'], { axis: 0 }, 'split').node('Add', ['a', 'a'], ['y']).output('y').build()),
    `m.onnx: value 'a' is defined twice (again by Split 'split'); ${ONCE}`);
});

test('in an If branch: an outer value, a branch initializer or a branch value written again, one line naming where', () => {
  const prefix = (b: OnnxModelBuilder): OnnxModelBuilder => b.tensor(TRUE);
  assert.is(refusal(ifNode(prefix(m()), new OnnxModelBuilder(13).node('Relu', ['x'], ['x'], {}, 'r').output('x')).output('y').build()),
    `m.onnx: value 'x' is defined twice (again by Relu 'r' in the then_branch of If 'y'); ${ONCE}`);
  assert.is(refusal(ifNode(prefix(m()), new OnnxModelBuilder(13).float('k', [1], [1]).node('Add', ['x', 'k'], ['k'], {}, 'add').output('k')).output('y').build()),
    `m.onnx: value 'k' is defined twice (again by Add 'add' in the then_branch of If 'y'); ${ONCE}`);
  assert.is(refusal(ifNode(prefix(m()), new OnnxModelBuilder(13).float('k', [1], [1]).float('k', [1], [2]).node('Add', ['x', 'k'], ['o']).output('o')).output('y').build()),
    `m.onnx: value 'k' is defined twice (again by an initializer of the then_branch of If 'y'); ${ONCE}`);
  assert.is(refusal(ifNode(prefix(m()), new OnnxModelBuilder(13).node('Relu', ['x'], ['t']).node('Neg', ['x'], ['t'], {}, 'neg').output('t')).output('y').build()),
    `m.onnx: value 't' is defined twice (again by Neg 'neg' in the then_branch of If 'y'); ${ONCE}`);
  // A computed condition converts both branches: the same refusal.
  const computed = new OnnxModelBuilder(13).input('x', [2]).typedInput('c', DataType.BOOL, []);
  assert.is(refusal(ifNode(computed, new OnnxModelBuilder(13).node('Relu', ['x'], ['x'], {}, 'r').output('x')).output('y').build()),
    `m.onnx: value 'x' is defined twice (again by Relu 'r' in the then_branch of If 'y'); ${ONCE}`);
  // Nested: the inner If's branch names both Ifs.
  const inner = new OnnxModelBuilder(13).node('Relu', ['x'], ['x'], {}, 'deep');
  const outerThen = ifNode(new OnnxModelBuilder(13), inner, 'inner_y').output('inner_y');
  assert.is(refusal(ifNode(prefix(m()), outerThen).output('y').build()),
    `m.onnx: value 'x' is defined twice (again by Relu 'deep' in the then_branch of If 'inner_y' in the then_branch of If 'y'); ${ONCE}`);
});

test('a branch initializer shadows an outer value inside the branch only; a branch\'s own names end with it', () => {
  const then = new OnnxModelBuilder(13).float('x', [2], [5, 7]).node('Add', ['x', 'x'], ['o']).output('o');
  const model = importOnnx(ifNode(m().tensor(TRUE), then).node('Neg', ['x'], ['after']).output('y').output('after').build(), 'm.onnx');
  const [y, after] = runGraph(model.graph, new Map([['x', Float32Array.of(1, 2)]]));
  assert.equal([...y], [10, 14], 'the branch reads its own x');
  assert.equal([...after], [-1, -2], 'after the If, x is the graph input again');
  // A name local to a branch may be defined again after the If (onnx.checker scopes it to the branch).
  const local = importOnnx(ifNode(m().tensor(TRUE), new OnnxModelBuilder(13).node('Relu', ['x'], ['t']).node('Neg', ['t'], ['o']).output('o'))
    .node('Abs', ['x'], ['t']).node('Add', ['y', 't'], ['z']).output('z').build(), 'm.onnx');
  assert.equal([...runGraph(local.graph, new Map([['x', Float32Array.of(3, -4)]]))[0]], [0, 4]);
});

test('the command line prints the one line and exits non-zero', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tt-onnx-ssa-'));
  try {
    const file = path.join(dir, 'dup.onnx');
    writeFileSync(file, m().node('Relu', ['x'], ['y']).node('Neg', ['x'], ['y']).output('y').build());
    const err: string[] = [];
    const code = await main(['tasks', file], { out: () => undefined, err: (t) => { err.push(t); } });
    assert.is.not(code, 0);
    assert.is(err.join(''), `tensortune tasks: ${file}: value 'y' is defined twice (again by Neg 'y'); ${ONCE}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
