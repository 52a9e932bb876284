// The ONNX backend node test cases, as scripts/conformance/generate.py writes them: made at
// test time by the pinned onnx package (scripts/conformance/requirements.txt), never
// committed, kept in a cache folder named after the onnx release and the generator's hash
// (<cacheRoot()>/conformance/onnx-<version>-<hash>/), and regenerated when either changes.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from '../native/build';
import { packageRoot } from '../package-root';

/** One input or output value of a case: a tensor with its numpy dtype, shape and raw file, or another kind of value. */
export interface CaseValue {
  name: string;
  /** 'tensor', 'sequence', 'optional', or a Python type name. */
  kind: string;
  /** numpy's dtype name (float32, int64, bool, ...), or the ONNX type's for what numpy cannot hold (float8e4m3fn, int4, ...). */
  dtype?: string;
  shape?: number[];
  /** The value's bytes (little-endian, row-major), in the case's folder; only for plain numeric tensors. */
  file?: string;
}

export interface ConformanceCase {
  name: string;
  /** The operator the case tests (an expanded case: its unexpanded twin's). */
  operator: string;
  /** The operator's function body inlined (onnx's `_expanded` cases). */
  expanded: boolean;
  /** Operator domains other than the default one. */
  domains: string[];
  opset: number | null;
  rtol: number;
  atol: number;
  graph_inputs: { name: string; type: string }[];
  graph_outputs: { name: string; type: string }[];
  data_sets: { inputs: CaseValue[]; outputs: CaseValue[] }[];
}

export interface CaseIndex {
  format: number;
  onnx_version: string;
  numpy_version: string;
  cases: ConformanceCase[];
}

export const CONFORMANCE_DIR = path.join(packageRoot(), 'scripts', 'conformance');
const GENERATOR = path.join(CONFORMANCE_DIR, 'generate.py');
const REQUIREMENTS = path.join(CONFORMANCE_DIR, 'requirements.txt');
const INDEX_FORMAT = 1;

/** The onnx release requirements.txt pins. */
export function pinnedOnnxVersion(): string {
  const m = /^onnx==(\S+)\s*$/m.exec(readFileSync(REQUIREMENTS, 'utf8'));
  if (!m) throw new Error(`${REQUIREMENTS}: no onnx==<version> line`);
  return m[1];
}

const run = promisify(execFile);

/** The python3 with the pinned onnx, or why the suite cannot run here (one line). */
export async function findPython(): Promise<{ python: string } | { missing: string }> {
  const python = process.env.PYTHON?.trim() || 'python3';
  const pinned = pinnedOnnxVersion();
  let version: string;
  try {
    version = (await run(python, ['-c', 'import onnx, numpy; print(onnx.__version__)'], { timeout: 60_000 })).stdout.trim();
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    const why = err.code === 'ENOENT' ? `${python} not found` : `${python} cannot import onnx and numpy`;
    return { missing: `${why} (pip install -r scripts/conformance/requirements.txt)` };
  }
  if (version !== pinned) return { missing: `${python} has onnx ${version}, the suite is pinned to ${pinned} (pip install -r scripts/conformance/requirements.txt)` };
  return { python };
}

/** The cache folder of the cases of this onnx release and generator. */
export function casesDir(root = path.join(cacheRoot(), 'conformance')): string {
  const hash = createHash('sha256').update(readFileSync(GENERATOR)).digest('hex').slice(0, 12);
  return path.join(root, `onnx-${pinnedOnnxVersion()}-${hash}`);
}

/** The cases, generated first when the cache has none for this onnx release and generator. */
export async function loadCases(python: string, dir = casesDir(), log: (line: string) => void = () => undefined): Promise<{ dir: string; index: CaseIndex }> {
  const indexFile = path.join(dir, 'index.json');
  if (!existsSync(indexFile)) {
    log(`conformance: generating the ONNX node test cases into ${dir}`);
    await run(python, [GENERATOR, dir], { timeout: 600_000, maxBuffer: 16 << 20 });
  }
  const index = JSON.parse(readFileSync(indexFile, 'utf8')) as CaseIndex;
  if (index.format !== INDEX_FORMAT) throw new Error(`${indexFile}: format ${index.format}, expected ${INDEX_FORMAT}; delete ${dir}`);
  return { dir, index };
}

/** The folder of one case's files. */
export const caseDir = (dir: string, name: string): string => path.join(dir, 'cases', name);
