// The builtin networks, mirroring TVM's `relay.testing` workloads, by name:
//   getNetwork('resnet-18', { layout: 'NCHW' }) -> { graph, inputs, inputName, inputShape, outputShape }
// Weights are random (TVM's Xavier rules, our own seeded PRNG: see init.ts), so these are
// for tuning, benchmarking and testing, not for classifying images.

import { UserError } from '../errors';
import { didYouMean } from '../suggest';
import type { ConstantNode, Graph } from '../graph/graph';
import type { DType } from '../ir/expr';
import type { Layout } from '../topi/nn';
import { NetBuilder, type BuildOptions } from './builder';
import { INCEPTION_MIN_IMAGE, inceptionV3 } from './inception';
import { mobilenet } from './mobilenet';
import { mobilenetV2 } from './mobilenet-v2';
import { bert } from './bert';
import { vit } from './vit';
import { RESNET_DEPTHS, RESNET_MIN_IMAGE, resnet } from './resnet';
import { RESNET3D_MIN_IMAGE, resnet3d18 } from './resnet3d';
import { dcgan } from './dcgan';
import { squeezenet } from './squeezenet';
import { VGG_DEPTHS, vgg } from './vgg';

export interface NetworkOptions {
  /** Batch size (default 1). */
  batch?: number;
  /** Data layout of the input and of every operator (default 'NHWC'). */
  layout?: Layout;
  /** Height = width of the input image (default 224; 299 for inception_v3). */
  imageSize?: number;
  /** Seed of the weight generator (default 0, as TVM's create_workload). */
  seed?: number;
  /** Batch norms get non-trivial gamma/beta/mean/var (default false: TVM's 1/0/0/1). */
  randomStats?: boolean;
  /** 'zeros' skips drawing weights (all constants zero-filled), for shape-only uses such as task extraction (default 'random'). */
  weights?: 'random' | 'zeros';
}

export interface NetworkInput {
  readonly name: string;
  readonly shape: readonly number[];
  /** float32 for images; int32 for token ids and masks (ONNX int64 in an exported model). */
  readonly dtype: DType;
}

export interface Network {
  readonly name: string;
  readonly graph: Graph;
  /** Every graph input, in order. */
  readonly inputs: readonly NetworkInput[];
  /** The first input's name and shape (an image network's only input). */
  readonly inputName: string;
  readonly inputShape: readonly number[];
  /** The (single) output's shape: [batch, 1000] softmax probabilities for the classifiers, [batch, 128, 768] hidden states for bert-base, [batch, 3, 64, 64] images for dcgan (NHWC: [batch, 64, 64, 3]). */
  readonly outputShape: readonly number[];
}

interface Entry {
  readonly build: (b: NetBuilder) => number;
  readonly defaultImage: number;
  readonly minImage: number;
  /** The network reads no image (token ids): imageSize does not apply. */
  readonly noImage?: boolean;
}

const ENTRIES = new Map<string, Entry>();
ENTRIES.set('mobilenet', { build: mobilenet, defaultImage: 224, minImage: 32 });
for (const d of RESNET_DEPTHS) ENTRIES.set(`resnet-${d}`, { build: (b) => resnet(b, d), defaultImage: 224, minImage: RESNET_MIN_IMAGE });
for (const d of VGG_DEPTHS) ENTRIES.set(`vgg-${d}`, { build: (b) => vgg(b, d, false), defaultImage: 224, minImage: 32 });
for (const d of VGG_DEPTHS) ENTRIES.set(`vgg-${d}-bn`, { build: (b) => vgg(b, d, true), defaultImage: 224, minImage: 32 });
ENTRIES.set('squeezenet_v1.0', { build: (b) => squeezenet(b, '1.0'), defaultImage: 224, minImage: 29 });
ENTRIES.set('squeezenet_v1.1', { build: (b) => squeezenet(b, '1.1'), defaultImage: 224, minImage: 29 });
ENTRIES.set('inception_v3', { build: inceptionV3, defaultImage: 299, minImage: INCEPTION_MIN_IMAGE });
ENTRIES.set('mobilenet_v2', { build: mobilenetV2, defaultImage: 224, minImage: 32 });
// resnet3d-18 reads a 16-frame clip of imageSize x imageSize frames; dcgan a code vector [batch, 100] and writes a 64x64 image.
ENTRIES.set('resnet3d-18', { build: resnet3d18, defaultImage: 112, minImage: RESNET3D_MIN_IMAGE });
ENTRIES.set('dcgan', { build: dcgan, defaultImage: 64, minImage: 1, noImage: true });
ENTRIES.set('vit-s16', { build: (b) => vit(b), defaultImage: 224, minImage: 16 });
ENTRIES.set('bert-base', { build: (b) => bert(b), defaultImage: 224, minImage: 1, noImage: true });

/** Every builtin network name. */
export const NETWORK_NAMES: readonly string[] = [...ENTRIES.keys()];

/** The builtin networks that read no image (token ids): imageSize does not apply to them. */
export const NO_IMAGE_NETWORKS: readonly string[] = [...ENTRIES].filter(([, e]) => e.noImage).map(([n]) => n);

/** `; did you mean mobilenet?` to close the message about an unknown network name, or ''. */
export function networkSuggestion(name: string): string {
  const hint = didYouMean(name, NETWORK_NAMES);
  return hint ? `; ${hint}` : '';
}

const OPTION_KEYS = ['batch', 'layout', 'imageSize', 'seed', 'randomStats', 'weights'];

const isPositiveInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 1;

function resolveOptions(name: string, entry: Entry, opts: NetworkOptions): BuildOptions {
  if (typeof opts !== 'object' || opts === null) throw new UserError(`network ${name}: options must be an object with keys ${OPTION_KEYS.join(', ')}`);
  const unknown = Object.keys(opts).filter((k) => !OPTION_KEYS.includes(k));
  if (unknown.length) throw new UserError(`network ${name}: unknown option(s) ${unknown.join(', ')} (expected: ${OPTION_KEYS.join(', ')})`);
  if (entry.noImage && opts.imageSize !== undefined) throw new UserError(`network ${name}: imageSize does not apply (its inputs are not an image: token ids, or dcgan's code vector)`);
  const { batch = 1, layout = 'NHWC', imageSize = entry.defaultImage, seed = 0, randomStats = false, weights = 'random' } = opts;
  if (!isPositiveInt(batch)) throw new UserError(`network ${name}: batch must be a positive integer, got ${String(batch)}`);
  if (layout !== 'NHWC' && layout !== 'NCHW') throw new UserError(`network ${name}: layout must be 'NHWC' or 'NCHW', got ${JSON.stringify(layout)}`);
  if (!isPositiveInt(imageSize) || imageSize < entry.minImage) {
    throw new UserError(`network ${name}: imageSize must be an integer >= ${entry.minImage}, got ${String(imageSize)}`);
  }
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new UserError(`network ${name}: seed must be an integer in [0, 2^32), got ${String(seed)}`);
  }
  if (typeof randomStats !== 'boolean') throw new UserError(`network ${name}: randomStats must be true or false, got ${String(randomStats)}`);
  if (weights !== 'random' && weights !== 'zeros') throw new UserError(`network ${name}: weights must be 'random' or 'zeros', got ${JSON.stringify(weights)}`);
  return { batch, layout, imageSize, seed, randomStats, weights };
}

/** Build a builtin network. Throws a UserError for an unknown name or a bad option. */
export function getNetwork(name: string, opts: NetworkOptions = {}): Network {
  const entry = ENTRIES.get(name);
  if (!entry) throw new UserError(`unknown network ${JSON.stringify(name)} (expected one of: ${NETWORK_NAMES.join(', ')})${networkSuggestion(name)}`);
  const b = new NetBuilder(resolveOptions(name, entry, opts));
  const out = entry.build(b);
  b.graph.outputs = [out];
  const inputs = b.graph.nodes.filter((n) => n.op === 'input').map((n) => ({ name: n.name, shape: n.shape, dtype: n.dtype }));
  return { name, graph: b.graph, inputs, inputName: inputs[0].name, inputShape: inputs[0].shape, outputShape: b.graph.node(out).shape };
}

/** Number of parameter values (elements of all constants) in a graph. */
export function countParams(graph: Graph): number {
  return graph.nodes.reduce((acc, n) => acc + (n.op === 'constant' ? (n as ConstantNode).data.length : 0), 0);
}
