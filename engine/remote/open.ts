// Opening the devices of a target's runners for tune: every runner's worker is started (and
// installed), each device says what it is, and the hardware fingerprint is computed from
// that answer (not from this machine), so records and the Nx cache are keyed by the board
// that measured them. All runners of one pool must reach devices of one kind.

import { createHash } from 'node:crypto';
import { UserError } from '../errors';
import type { MeasureDevice, MeasureOptions, Measurer } from '../measure/types';
import { kindOf, type Target } from '../target';
import { describedOpenclDevice } from './opencl';
import { RemoteMeasurer } from './measurer';
import { RemotePool, type PoolOptions } from './pool';
import type { DeviceInfo } from './session';

/** The fingerprint of a target measured on a device that answered `info`. As the local
 *  one (target.ts hardwareFingerprint): CPU model, vector features, cores, architecture and
 *  the target string; for a kind whose device describes itself (OpenCL) also what its
 *  record's runner.describe makes of the description (the OpenCL platform, device and
 *  driver, as a local OpenCL fingerprint names them); `remote: true` keeps it apart from
 *  any local machine's. */
export function deviceFingerprint(target: Target, info: DeviceInfo): string {
  const features = info.features.split(/\s+/).filter((f) => /^(avx|fma|sse4|neon|asimd|sve)/.test(f)).sort();
  const model = [info.cpu, info.cpu_implementer, info.cpu_part].filter(Boolean).join(' ') || 'unknown';
  const describe = kindOf(target).runner.describe;
  const text = JSON.stringify({ remote: true, model, features, cores: info.cores, target: target.text, arch: info.machine,
    ...(describe ? describe.identity(describe.device(info.described, info.describe_error)) : {}) });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The OpenCL device a device's info describes (its candidates open that one), or why there is none. */
export function openclOf(info: DeviceInfo): ReturnType<typeof describedOpenclDevice> {
  return describedOpenclDevice(info.described, info.describe_error);
}

/** One line that names a device: "aarch64, AMD EPYC, 2 cores" (and its OpenCL device when it described one). */
export function describeDevice(info: DeviceInfo): string {
  const cl = info.described !== undefined ? openclOf(info) : undefined;
  const opencl = cl && 'device' in cl ? `, OpenCL: ${cl.device.device} (${cl.device.platform}, driver ${cl.device.driverVersion})` : '';
  return `${info.machine}, ${[info.cpu, info.cpu_part].filter(Boolean).join(' ') || 'unknown CPU'}, ${info.cores} core(s)${opencl}`;
}

export interface OpenedDevices extends MeasureDevice {
  pool: RemotePool;
  infos: DeviceInfo[];
  close(): Promise<void>;
}

/** Remote measurement: the kinds whose record says so (runner.tune: CPU targets, and OpenCL
 *  targets, whose candidate library carries the OpenCL runtime). */
export function checkRemoteTarget(target: Target, where: string): void {
  if (!kindOf(target).runner.tune) {
    throw new UserError(`${where}: measuring through a runner supports CPU targets ("llvm -mtriple=...") and OpenCL targets, not "${target.text}" yet (GPU targets through a runner: OpenCL only)`);
  }
}

/** benchmark --runner: the kinds whose record says so (runner.benchmark: compiled CPU models; a GPU model through a runner is not built yet). */
export function checkRemoteBenchTarget(target: Target, where: string): void {
  if (!kindOf(target).runner.benchmark) {
    throw new UserError(`${where}: benchmarking through a runner supports models compiled for CPU targets ("llvm -mtriple=..."), not "${target.text}" yet (GPU targets through a runner: tune only)`);
  }
}

/** Starts the pool; throws one UserError when no device starts or the devices differ. */
export async function openRemoteDevices(templates: readonly string[], target: Target, where: string, opts: PoolOptions = {}): Promise<OpenedDevices> {
  checkRemoteTarget(target, where);
  // Built before any device starts, so a missing cross toolchain or OpenCL header is one message.
  const describe = kindOf(target).runner.describe;
  if (describe) await describe.library(target);
  const pool = new RemotePool(templates, target, where, opts);
  let opened;
  try {
    opened = await pool.open();
  } catch (e) {
    await pool.close();
    throw e;
  }
  const prints = opened.map(({ info }) => deviceFingerprint(target, info));
  const odd = prints.findIndex((p) => p !== prints[0]);
  if (odd > 0) {
    await pool.close();
    throw new UserError(`${where}: the runners of one target must reach devices of one kind: ${opened[0].device.label} is ` +
      `${describeDevice(opened[0].info)}, ${opened[odd].device.label} is ${describeDevice(opened[odd].info)}`);
  }
  if (describe) {
    // Every candidate would fail: say why once, as a local OpenCL target without a device does.
    const none = opened.map(({ device, info }) => ({ device, cl: describe.device(info.described, info.describe_error) })).find(({ cl }) => 'error' in cl);
    if (none) {
      await pool.close();
      throw new UserError(`${where}: ${none.device.label} has no usable ${kindOf(target).label} device for "${target.text}": ${(none.cl as { error: string }).error}`);
    }
  }
  let measurer: RemoteMeasurer | undefined;
  return {
    pool,
    infos: opened.map((o) => o.info),
    fingerprint: prints[0],
    measurer(t: Target, measure: Partial<MeasureOptions> & { seed: number }): Measurer {
      measurer = new RemoteMeasurer(t, pool, measure);
      return measurer;
    },
    close: () => (measurer ? measurer.close() : pool.close()),
  };
}

/** The fingerprint of the devices behind `templates` for `target` (compile: the records
 *  tuned on them apply); starts their workers to ask, runs nothing else there. */
export async function remoteFingerprint(templates: readonly string[], target: Target, where: string, opts: PoolOptions = {}): Promise<string> {
  const opened = await openRemoteDevices(templates, target, where, opts);
  await opened.close();
  return opened.fingerprint;
}
