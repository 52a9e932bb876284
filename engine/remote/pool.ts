// A pool of devices of one kind (one runner each, as TVM's tracker serves several boards
// under one key). A batch is a queue every live device takes work from, so all of them
// measure at once. When a device fails (no reply: the connection ended, garbage, no answer
// in time, its runner cannot start the worker), it is marked dead for the rest of the run
// and the item it held goes back to the queue for another device. An item that was in
// flight on two devices that failed gets `lost` (recorded as device_error) rather than
// taking a third one down. When no device is left, run() throws one UserError naming each
// device and why it failed; what earlier batches measured is already in the log.

import { UserError } from '../errors';
import type { Target } from '../target';
import { RemoteDevice, type DeviceOptions } from './device';
import { parseRunners } from './runner';
import { DeviceError, type DeviceInfo } from './session';

/** How many devices may fail holding one item before the item is given up as device_error. */
export const MAX_DEVICE_FAILURES_PER_ITEM = 2;

export type PoolResult<R> = { ok: R } | { lost: string };

export interface PoolOptions extends DeviceOptions {
  /** Called after each item a device finished (tests, progress). */
  onAnswer?: (device: RemoteDevice, item: number) => void;
}

export class RemotePool {
  readonly devices: RemoteDevice[];
  private readonly log: (line: string) => void;

  constructor(templates: readonly string[], target: Target, where: string, private readonly opts: PoolOptions = {}) {
    this.log = opts.log ?? (() => undefined);
    this.devices = parseRunners(templates, where).map((r, i) => new RemoteDevice(r, i, target, opts));
  }

  get live(): RemoteDevice[] {
    return this.devices.filter((d) => d.alive);
  }

  private allDead(): UserError {
    const lines = this.devices.map((d) => `  ${d.label}: ${d.deadReason ?? 'not started'}`);
    return new UserError(`no measurement device is left (${this.devices.length} runner(s)):\n${lines.join('\n')}`);
  }

  private fail(d: RemoteDevice, e: unknown, quiet = false): void {
    if (!(e instanceof DeviceError)) throw e;
    const why = e.message.startsWith(d.label) ? e.message.slice(d.label.length + 2) : e.message;
    d.markDead(why);
    const left = this.live.length;
    // With no device left, the caller's one error names every device: no line before it.
    if (left > 0 && !quiet) this.log(`${d.label} failed: ${why}; ${left} device(s) carry on`);
  }

  /**
   * Starts every device and asks each what it is; devices that cannot start are marked
   * dead (and logged). Throws when none starts. The infos of the live devices, in order.
   */
  async open(): Promise<{ device: RemoteDevice; info: DeviceInfo }[]> {
    const infos = await Promise.all(this.devices.map(async (d) => {
      try {
        return { device: d, info: await d.info() };
      } catch (e) {
        this.fail(d, e, true);
        return undefined;
      }
    }));
    const live = infos.filter((x): x is NonNullable<typeof x> => x !== undefined);
    if (live.length === 0) throw this.allDead();
    for (const d of this.devices) if (!d.alive) this.log(`${d.label} failed: ${d.deadReason}; ${live.length} device(s) carry on`);
    return live;
  }

  /** Runs `work` for every item on the live devices in parallel; results in item order. */
  async run<I, R>(items: readonly I[], work: (device: RemoteDevice, item: I) => Promise<R>): Promise<PoolResult<R>[]> {
    const results = new Array<PoolResult<R>>(items.length);
    const queue = items.map((_, i) => i);
    const failures = new Map<number, string[]>();
    let inFlight = 0;
    let wake: (() => void) | undefined;
    const changed = (): void => { const w = wake; wake = undefined; w?.(); };
    const serve = async (d: RemoteDevice): Promise<void> => {
      for (;;) {
        if (!d.alive) return;
        const i = queue.shift();
        if (i === undefined) {
          if (inFlight === 0) return;
          await new Promise<void>((r) => { const prev = wake; wake = () => { prev?.(); r(); }; });
          continue;
        }
        inFlight++;
        try {
          results[i] = { ok: await work(d, items[i]) };
          this.opts.onAnswer?.(d, i);
        } catch (e) {
          if (!(e instanceof DeviceError)) throw e;
          const seen = [...failures.get(i) ?? [], e.message];
          failures.set(i, seen);
          const lost = seen.length >= MAX_DEVICE_FAILURES_PER_ITEM;
          if (lost) results[i] = { lost: `${seen.length} device failures running it: ${seen.join('; ')}` };
          else queue.unshift(i); // back to the front: the next free device takes it
          changed(); // a waiting device need not wait for this one's reconnect
          // One chance to come back (a dropped connection); a device that cannot is out of the pool.
          try {
            await d.connect();
            this.log(`${e.message}; the device answers again, ${lost ? 'the candidate is recorded as a device_error' : 'the candidate is measured again'}`);
          } catch (again) {
            this.fail(d, again instanceof DeviceError ? new DeviceError(`${again.message} (after: ${e.message})`) : again);
          }
        } finally {
          inFlight--;
          changed();
        }
      }
    };
    await Promise.all(this.live.map(serve));
    for (let i = 0; i < items.length; i++) if (results[i] === undefined) throw this.allDead(); // (a sparse array: no .some)
    return results;
  }

  async close(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.close()));
  }
}
