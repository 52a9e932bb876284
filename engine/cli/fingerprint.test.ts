// `tensortune fingerprint`: an OpenCL target's line names the device its fingerprint hashes,
// or why there is none; CPU targets print as before.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { OpenclDevice } from '../native/opencl';
import { hardwareFingerprint, parseTarget } from '../target';
import { fingerprintCommand, fingerprintReport } from './fingerprint';

const gpu: OpenclDevice = {
  platform: 'ARM Platform', platformVendor: 'ARM', platformVersion: 'OpenCL 2.1 v1.r26p0', device: 'Mali-G72', deviceVendor: 'ARM',
  deviceVersion: 'OpenCL 2.1 v1.r26p0', driverVersion: '2.1', type: 'gpu', computeUnits: 12, maxWorkGroupSize: 384,
  maxWorkItemSizes: [384, 384, 384], localMemSize: 32768, globalMemSize: 1 << 30, preferredVectorWidthFloat: 4,
};

test('fingerprintReport: OpenCL targets carry their device, CPU targets do not', async () => {
  const report = await fingerprintReport(['opencl -device=mali', 'llvm'], () => ({ device: gpu }));
  const [mali, cpu] = report.targets;
  assert.equal(mali.opencl, { platform: 'ARM Platform', platformVersion: 'OpenCL 2.1 v1.r26p0', device: 'Mali-G72', deviceVersion: 'OpenCL 2.1 v1.r26p0', driverVersion: '2.1' });
  assert.is(mali.fingerprint, hardwareFingerprint(parseTarget('opencl -device=mali'), () => ({ device: gpu })));
  assert.equal(cpu, { target: 'llvm', fingerprint: hardwareFingerprint(parseTarget('llvm')) });
  const none = await fingerprintReport(['opencl'], () => ({ error: 'no OpenCL platform' }));
  assert.equal(none.targets[0].opencl, { error: 'no OpenCL platform' });
});

test('tensortune fingerprint --target opencl prints the device line under the fingerprint', async () => {
  let out = '';
  assert.is(await fingerprintCommand.run(['--target', 'opencl', 'llvm'], { out: (t) => { out += t; }, err: () => undefined }), 0);
  const lines = out.trimEnd().split('\n');
  assert.match(lines[3], /^[0-9a-f]{16} llvm$/, 'positional targets first');
  assert.match(lines[4], /^[0-9a-f]{16} opencl$/);
  assert.match(lines[5], /^ {2}opencl (platform .*, device .*\(.*driver .*\)|no-opencl-device: .+)$/);
});

test.run();
