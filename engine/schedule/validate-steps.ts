// Validation of step lists that come from outside the process (record logs, files), before
// any of them is replayed: schemas/steps.schema.json, checked with ajv. The schema restricts
// every name to identifier characters and bounds every number, so a record cannot smuggle
// text into generated C (the lowering additionally rebuilds every C name with cName). Then
// the unrolling the steps ask for is bounded (MAX_UNROLL), so that a record cannot hang the
// C compiler; this part needs no DAG, so distill can apply it to any log.

import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { numElements } from '../ir/tensor';
import { packageRoot } from '../package-root';
import { MAX_UNROLL, type Step } from './steps';

/** A schema of the package's schemas/ parsed from its file. */
export function loadSchema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(packageRoot(), 'schemas', file), 'utf8')) as Record<string, unknown>;
}

let ajv: Ajv | undefined;

/** One ajv instance for the engine's schemas (steps and records refer to each other by $id). */
export function schemaValidator(): Ajv {
  if (!ajv) {
    ajv = new Ajv({ allErrors: false, discriminator: true, strict: true });
    ajv.addSchema(loadSchema('steps.schema.json'));
  }
  return ajv;
}

let validateStepList: ValidateFunction | undefined;

/** ajv's first error as one phrase: `/3/lengths/0 must be integer`. */
export function describeSchemaError(errors: ErrorObject[] | null | undefined, root = ''): string {
  const e = errors?.[0];
  if (!e) return 'does not match the schema';
  const where = `${root}${e.instancePath}` || '(top level)';
  const extra = e.keyword === 'additionalProperties' ? ` '${String((e.params as { additionalProperty?: string }).additionalProperty)}'`
    : e.keyword === 'enum' ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((x) => JSON.stringify(x)).join(', ')})`
      : '';
  return `${where} ${e.message ?? 'is invalid'}${extra}`;
}

export type StepsCheck = { ok: true; steps: Step[] } | { ok: false; message: string };

/**
 * Checks that `value` is a well-formed step list whose unrolling is bounded (unrollProblem);
 * never throws. Lowering checks every unrolled loop again with the task's real extents.
 */
export function checkSteps(value: unknown): StepsCheck {
  validateStepList ??= schemaValidator().getSchema('https://tensortune.dev/schemas/steps.schema.json')!;
  if (!validateStepList(value)) return { ok: false, message: describeSchemaError(validateStepList.errors, 'steps') };
  const steps = value as Step[];
  const problem = unrollProblem(steps);
  return problem ? { ok: false, message: problem } : { ok: true, steps };
}

/**
 * Unrolling the steps alone show to exceed MAX_UNROLL, or to be unbounded: an
 * auto_unroll_max_step above it; an `unroll` of a loop whose extent the steps fix (a split's
 * inner part, a fusion of such parts) above it; an `unroll` of a loop whose extent only the
 * task's DAG knows (an original axis, a split's outer part) in a stage computed at root,
 * which is how a large outer loop gets unrolled. A loop of a stage computed at another
 * stage's loop spans that tile (the default schedule unrolls one); lowering bounds it.
 */
function unrollProblem(steps: readonly Step[]): string | undefined {
  const loop = (stage: string, iter: string): string => `${stage} ${iter}`;
  const extents = new Map<string, number>(); // loop -> extent the steps fix
  const unrolled = new Map<string, { stage: string; iter: string; at: number }>(); // loop -> its unroll step
  const attach = new Map<string, string>(); // stage -> its last compute_* step
  for (const [at, st] of steps.entries()) {
    switch (st.s) {
      case 'pragma':
        if (st.value > MAX_UNROLL) return `steps/${at}/value: auto_unroll_max_step ${st.value} is more than ${MAX_UNROLL}, the most a loop may unroll`;
        break;
      case 'split': {
        st.lengths.forEach((l, i) => extents.set(loop(st.stage, `${st.iter}.${i + 1}`), l));
        const parent = extents.get(loop(st.stage, st.iter));
        if (parent !== undefined) extents.set(loop(st.stage, `${st.iter}.0`), Math.ceil(parent / numElements(st.lengths)));
        const ann = unrolled.get(loop(st.stage, st.iter)); // as State: the annotation moves to the outer part
        unrolled.delete(loop(st.stage, st.iter));
        if (ann) unrolled.set(loop(st.stage, `${st.iter}.0`), { ...ann, iter: `${st.iter}.0` });
        break;
      }
      case 'fuse': {
        const parts = st.iters.map((it) => extents.get(loop(st.stage, it)));
        if (parts.every((p) => p !== undefined)) extents.set(loop(st.stage, st.iters.join('@')), numElements(parts as number[]));
        for (const it of st.iters) unrolled.delete(loop(st.stage, it)); // no longer loops
        break;
      }
      case 'annotate':
        if (st.ann === 'unroll') unrolled.set(loop(st.stage, st.iter), { stage: st.stage, iter: st.iter, at });
        else unrolled.delete(loop(st.stage, st.iter));
        break;
      case 'compute_at': case 'compute_root': case 'compute_inline':
        attach.set(st.stage, st.s);
        break;
      default:
        break;
    }
  }
  for (const [key, u] of unrolled) {
    const extent = extents.get(key);
    const where = `steps/${u.at}: unroll of ${u.stage}.${u.iter}`;
    if (extent !== undefined) {
      if (extent > MAX_UNROLL) return `${where} (${extent} iterations) is more than ${MAX_UNROLL}, the most a loop may unroll`;
    } else if (!attach.has(u.stage) || attach.get(u.stage) === 'compute_root') {
      return `${where}, a loop of a stage computed at root whose extent the steps do not bound (expected an unrolled loop of at most ${MAX_UNROLL} iterations: a split's inner part, or a loop inside a compute_at tile)`;
    }
  }
  return undefined;
}
