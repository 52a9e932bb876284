// Operator fusion: partition a graph's op nodes into fused groups, each of which becomes
// one kernel (and, if it holds a reduction, one tuning task). The rules are those of
// TVM's FuseOps (graph_partitioner), restated:
//
// 1. Order the op nodes by a post-order DFS from the outputs (inputs visited in argument
//    order), as Relay does; this order decides ties, e.g. which of two convs feeding a
//    residual add gets to keep the add.
// 2. Every edge gets a pattern: the consumer's pattern, except that a broadcast op
//    reading an input of its own output shape is an elementwise edge.
// 3. Build the post-dominator tree: a node's parent is the nearest node that every path
//    from it to the graph's output passes through (none for an output, or when paths
//    diverge to different outputs). With it, the node records the worst (highest)
//    pattern seen on the way there.
// 4. Visit nodes in order and try to merge each node's group into the group of its
//    post-dominator (everything on the paths in between joins too):
//    - a conv/dense/pool (OutEWiseFusable) joins when the way there is elementwise and
//      every node on it is at most broadcast (conv + bias + relu, conv + residual add);
//      only in the first round;
//    - an elementwise/broadcast node joins when the way there is at most injective (or a
//      reduction), intermediate nodes are at most injective, and the post-dominator's
//      group is anything fusable, possibly already anchored by a conv (so bias chains
//      join an epilogue); in both rounds;
//    - an injective node (reshape, pad, transpose, concat) joins in the second round,
//      only if everything including the post-dominator's group is at most injective, so
//      it never enters a conv/dense/pool group;
//    - reductions (CommReduce) and opaque ops (softmax) never move; a group keeps at
//      most one OutEWiseFusable anchor.
//    Note what this does not do: an elementwise op in *front* of a conv reaches the conv
//    through a conv edge (pattern OutEWiseFusable), so it is not fused as a prologue;
//    TVM's own ResNet-18 task listing shows the same: BN-shift + ReLU in front of a
//    conv stays out of the conv's task.
// 5. Each group gets its compute DAG: the TOPI computes of its nodes chained together,
//    with the group's external inputs as placeholders p0, p1, ... in first-use order.

import { ComputeDAG } from '../ir/dag';
import { readTensors, rewrite } from '../ir/expr';
import { placeholder, type Tensor } from '../ir/tensor';
import { computeNode, isOpNode, type Graph, type OpNode } from './graph';
import { OpPattern, opDef } from './ops';
import { sameShape } from './rewrite';

export interface FusedGroup {
  id: number;
  /** Op node ids, in topological (node id) order. */
  nodes: number[];
  /** External node ids (graph inputs, constants, other groups' outputs), in placeholder order p0, p1, ... */
  inputs: number[];
  /** Node id of the group's output. */
  output: number;
  /** Placeholders p0..pn in first-use order; stages named as TOPI names them. */
  dag: ComputeDAG;
  hasReduction: boolean;
}

export interface PartitionOptions {
  /** Most op nodes in one group (TVM's relay.FuseOps.max_depth). */
  maxDepth?: number;
}

interface DomNode {
  parent: number | undefined; // node id of the immediate post-dominator
  depth: number;
  /** Worst edge pattern on the way to the parent. */
  pattern: OpPattern;
}

/**
 * A union-find set of nodes. Every node starts with its own Group; `pattern` is that
 * node's pattern, raised to OutEWiseFusable when the group (as a root) absorbs a group
 * holding a conv/dense/pool. The fusion rules read a node's *own* group pattern to pick
 * its rule, and the *root's* pattern when checking the nodes on a path.
 */
class Group {
  parent: Group | undefined;
  pattern: OpPattern;
  anchored: boolean;
  size = 1;
  constructor(pattern: OpPattern) {
    this.pattern = pattern;
    this.anchored = pattern === OpPattern.OutEWiseFusable;
  }
  root(): Group {
    return this.parent ? findRoot(this) : this;
  }
}

/** Union-find root, compressing the path on the way. */
function findRoot(g: Group): Group {
  let r = g;
  while (r.parent) r = r.parent;
  for (let p = g; p !== r;) { const next: Group = p.parent!; p.parent = r; p = next; }
  return r;
}

const worse = (a: OpPattern, b: OpPattern): OpPattern => (a > b ? a : b);

/** Post-order DFS over op nodes from the graph outputs (then any node left over), inputs in argument order. */
function postDfsOrder(g: Graph): number[] {
  const order: number[] = [];
  const seen = new Set<number>();
  const visit = (root: number): void => {
    // Iterative, so deep networks cannot overflow the stack.
    const stack: [number, number][] = [[root, 0]];
    seen.add(root);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const n = g.node(top[0]);
      if (top[1] < n.inputs.length) {
        const next = n.inputs[top[1]++];
        if (!seen.has(next) && isOpNode(g.node(next))) { seen.add(next); stack.push([next, 0]); }
      } else {
        order.push(top[0]);
        stack.pop();
      }
    }
  };
  for (const o of g.outputs) if (!seen.has(o) && isOpNode(g.node(o))) visit(o);
  for (let i = g.nodes.length - 1; i >= 0; i--) if (!seen.has(i) && isOpNode(g.nodes[i])) visit(i);
  return order;
}

export function partition(g: Graph, opts: PartitionOptions = {}): FusedGroup[] {
  const maxDepth = opts.maxDepth ?? 256;
  const order = postDfsOrder(g);
  const pattern = new Map<number, OpPattern>(order.map((id) => [id, opDef(g.node(id).op).pattern]));
  const outputs = new Set(g.outputs);

  // Forward edges between op nodes, with their patterns.
  const edges = new Map<number, { to: number; pattern: OpPattern }[]>(order.map((id) => [id, []]));
  for (const id of order) {
    const n = g.node(id);
    const p = pattern.get(id)!;
    for (const i of n.inputs) {
      const list = edges.get(i);
      if (!list) continue; // an input or constant
      const elemwise = p === OpPattern.Broadcast && sameShape(g.node(i).shape, n.shape);
      list.push({ to: id, pattern: elemwise ? OpPattern.ElemWise : p });
    }
  }

  // Post-dominator tree, built from the outputs backwards.
  const dom = new Map<number, DomNode>();
  const lca = (a: number | undefined, b: number | undefined, acc: { p: OpPattern }): number | undefined => {
    while (a !== b) {
      if (a === undefined || b === undefined) return undefined;
      const da = dom.get(a)!, db = dom.get(b)!;
      if (da.depth >= db.depth) { acc.p = worse(acc.p, da.pattern); a = da.parent; }
      if (db.depth >= da.depth) { acc.p = worse(acc.p, db.pattern); b = db.parent; }
    }
    return a;
  };
  for (let k = order.length - 1; k >= 0; k--) {
    const id = order[k];
    const out = edges.get(id)!;
    if (outputs.has(id) || out.length === 0) {
      dom.set(id, { parent: undefined, depth: 1, pattern: OpPattern.Opaque });
      continue;
    }
    const acc = { p: OpPattern.ElemWise };
    let parent: number | undefined = out[0].to;
    acc.p = worse(acc.p, out[0].pattern);
    for (const e of out.slice(1)) {
      parent = lca(parent, e.to, acc);
      acc.p = worse(acc.p, e.pattern);
    }
    dom.set(id, { parent, depth: parent === undefined ? 1 : dom.get(parent)!.depth + 1, pattern: acc.p });
  }

  const groups = new Map<number, Group>(order.map((id) => [id, new Group(pattern.get(id)!)]));
  const group = (id: number): Group => groups.get(id)!;

  /** Every node on the paths from `src` (exclusive) to `sink` (inclusive) satisfies `ok`. */
  const checkPath = (src: number, sink: number, ok: (p: OpPattern, isSink: boolean) => boolean): boolean => {
    const seen = new Set<number>();
    const stack = edges.get(src)!.map((e) => e.to);
    while (stack.length) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      if (!ok(group(id).root().pattern, id === sink)) return false;
      if (id !== sink) stack.push(...edges.get(id)!.map((e) => e.to));
    }
    return true;
  };
  /** Nodes on the paths from `src` (inclusive) to `sink` (exclusive). */
  const between = (src: number, sink: number): number[] => {
    const seen = new Set<number>([src]);
    const stack = [src];
    while (stack.length) {
      for (const e of edges.get(stack.pop()!)!) {
        if (e.to !== sink && !seen.has(e.to)) { seen.add(e.to); stack.push(e.to); }
      }
    }
    return [...seen];
  };
  const merge = (child: Group, into: Group): void => {
    const c = child.root(), p = into.root();
    if (c === p) return;
    p.size += c.size;
    c.parent = p;
    if (c.anchored) {
      if (p.anchored) throw new Error('fuse: two conv/dense/pool anchors in one group');
      p.anchored = true;
      p.pattern = worse(p.pattern, c.pattern);
    }
  };
  const commit = (src: number, sink: number): void => {
    const target = group(sink);
    for (const id of between(src, sink)) merge(group(id), target);
  };
  const fusedSize = (src: number, sink: number): number => {
    const roots = new Set(between(src, sink).map((id) => group(id).root()));
    roots.delete(group(sink).root());
    return group(sink).root().size + [...roots].reduce((a, r) => a + r.size, 0);
  };

  for (const phase of [0, 1]) {
    for (const id of order) {
      const own = group(id);
      const d = dom.get(id)!;
      if (own.pattern === OpPattern.Opaque || d.parent === undefined) continue;
      const sink = d.parent;
      if (own.root() === group(sink).root()) continue;
      if (fusedSize(id, sink) > maxDepth) continue;
      if (own.pattern === OpPattern.OutEWiseFusable) {
        if (phase === 0 && d.pattern === OpPattern.ElemWise && checkPath(id, sink, (p) => p <= OpPattern.Broadcast)) commit(id, sink);
      } else if (own.pattern <= OpPattern.Broadcast) {
        if (d.pattern <= OpPattern.Injective || d.pattern === OpPattern.CommReduce) {
          const ok = (p: OpPattern, isSink: boolean): boolean => (isSink ? p <= OpPattern.OutEWiseFusable : p <= OpPattern.Injective);
          if (checkPath(id, sink, ok)) commit(id, sink);
        }
      } else if (own.pattern === OpPattern.Injective) {
        if (phase === 1 && checkPath(id, sink, (p) => p <= OpPattern.Injective)) commit(id, sink);
      }
    }
  }

  // Collect the groups, ordered by their output node (every member reaches it, so it comes last).
  const members = new Map<Group, number[]>();
  for (const id of [...order].sort((a, b) => a - b)) {
    const r = group(id).root();
    const list = members.get(r) ?? [];
    list.push(id);
    members.set(r, list);
  }
  const lists = [...members.values()].sort((a, b) => a[a.length - 1] - b[b.length - 1]);
  return lists.map((nodes, gid) => {
    const inside = new Set(nodes);
    const exits = nodes.filter((id) => outputs.has(id) || edges.get(id)!.some((e) => !inside.has(e.to)));
    if (exits.length > 1) throw new Error(`fuse: group of nodes ${nodes.join(', ')} has ${exits.length} outputs`);
    const output = exits[0] ?? nodes[nodes.length - 1];
    const { dag, inputs } = groupDag(g, nodes, output);
    return { id: gid, nodes, inputs, output, dag, hasReduction: dag.computeStages.some((t) => t.op.body.k === 'reduce') };
  });
}

/** Chain the computes of `nodes` with the given placeholders for external inputs. */
function chain(g: Graph, nodes: readonly number[], output: number, external: (id: number) => Tensor): Tensor {
  const values = new Map<number, Tensor>();
  const valueOf = (id: number): Tensor => values.get(id) ?? external(id);
  for (const id of nodes) {
    const n = g.node(id) as OpNode;
    values.set(id, computeNode(n, n.inputs.map(valueOf)));
  }
  return values.get(output)!;
}

/** Build a group's DAG: placeholders p0.. in first-use order, stage names made unique. */
export function groupDag(g: Graph, nodes: readonly number[], output: number): { dag: ComputeDAG; inputs: number[] } {
  // First pass: find the order in which the DAG first reads each external input.
  const probe = new Map<Tensor, number>();
  // One placeholder per external node, however many times the group reads it (x * x).
  const probed = new Map<number, Tensor>();
  const probeOut = chain(g, nodes, output, (id) => {
    const known = probed.get(id);
    if (known) return known;
    const t = placeholder(`ext${id}`, g.node(id).shape, g.node(id).dtype);
    probe.set(t, id);
    probed.set(id, t);
    return t;
  });
  const firstUse = new ComputeDAG([uniqueNames(probeOut)]).inputs.map((t) => probe.get(t)!);
  // Second pass: the same chain with the final placeholder names.
  const named = new Map(firstUse.map((id, i) => [id, placeholder(`p${i}`, g.node(id).shape, g.node(id).dtype)]));
  const out = chain(g, nodes, output, (id) => named.get(id)!);
  return { dag: new ComputeDAG([uniqueNames(out)]), inputs: firstUse };
}

/**
 * Stage names must be unique within a DAG; TOPI reuses names (two adds are both
 * `T_add`), so later stages of a repeated name get `_1`, `_2`, ... (as TVM's lowering
 * names their buffers).
 */
export function uniqueNames(out: Tensor): Tensor {
  const order: Tensor[] = [];
  const seen = new Set<Tensor>();
  const visit = (t: Tensor): void => {
    if (seen.has(t)) return;
    seen.add(t);
    if (t.op.kind === 'compute') for (const i of readTensors(t.op.body)) visit(i);
    order.push(t);
  };
  visit(out);
  const counts = new Map<string, number>();
  const renamed = new Map<Tensor, Tensor>();
  for (const t of order) {
    const k = counts.get(t.name) ?? 0;
    counts.set(t.name, k + 1);
    const name = k === 0 ? t.name : `${t.name}_${k}`;
    if (t.op.kind !== 'compute') { renamed.set(t, t); continue; }
    const readsChanged = readTensors(t.op.body).some((i) => renamed.get(i) !== i);
    if (name === t.name && !readsChanged) { renamed.set(t, t); continue; }
    const body = readsChanged
      ? rewrite(t.op.body, (e) => (e.k === 'load' ? { ...e, tensor: renamed.get(e.tensor)! } : undefined))
      : t.op.body;
    renamed.set(t, { ...t, name, op: { ...t.op, body } });
  }
  return renamed.get(out)!;
}
