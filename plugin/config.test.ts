// Config loading and validation: every mistake is one message naming the file, the JSON
// path and what was expected.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseTarget } from '../engine/target';
import { ConfigError, loadConfig, validateConfig } from './config';
import { resolveRun } from './resolve';

const dir = mkdtempSync(path.join(tmpdir(), 'tt-config-'));

const GOOD = `
targets:
  cpu: { target: llvm -mcpu=native, threads: 2 }
budgets:
  tiny: { trialsPerTask: 2 }
  full: { trialsPerTask: 800, earlyStopping: 100 }
networks:
  mobilenet: { model: mobilenet, imageSize: 64 }
`;

function write(name: string, text: string): string {
  writeFileSync(path.join(dir, name), text);
  return name;
}

function errorOf(name: string, text: string): string {
  write(name, text);
  try {
    loadConfig(name, dir);
  } catch (e) {
    assert.instance(e, ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

test('a good YAML config loads; defaults resolve to the first target and budget', () => {
  const loaded = loadConfig(write('tensortune.config.yaml', GOOD), dir);
  const run = resolveRun(loaded, dir, 'mobilenet');
  assert.is(run.targetName, 'cpu');
  assert.is(run.budgetName, 'tiny');
  assert.equal(run.spec, { model: 'mobilenet', batch: undefined, layout: undefined, imageSize: 64 });
  assert.is(run.recordsFile, path.join(dir, '.tensortune', 'records', 'mobilenet.cpu.jsonl'));
  assert.is(run.modelDir, path.join(dir, 'dist', 'tensortune', 'mobilenet', 'cpu'));
});

test('JSON and .tensortunerc (YAML without extension) load', () => {
  const json = JSON.stringify({ targets: { cpu: { target: 'llvm' } }, networks: { r: { model: 'resnet-18' } } });
  assert.is(Object.keys(loadConfig(write('tensortune.config.json', json), dir).config.networks)[0], 'r');
  assert.is(Object.keys(loadConfig(write('.tensortunerc', 'targets: { cpu: { target: llvm } }\nnetworks: { v: { model: vgg-11 } }\n'), dir).config.networks)[0], 'v');
});

test('schema errors name the file, the JSON path and the expectation', () => {
  assert.is(errorOf('a.yaml', GOOD.replace('threads: 2', 'threads: two')), 'a.yaml: targets.cpu.threads: expected an integer, got "two"');
  assert.is(errorOf('b.yaml', GOOD.replace('trialsPerTask: 2', 'trialsPerTask: 0')), 'b.yaml: budgets.tiny.trialsPerTask: expected a number >= 1, got 0');
  assert.match(errorOf('c.yaml', GOOD.replace('imageSize: 64', 'imagesize: 64')), /^c\.yaml: networks\.mobilenet\.imagesize: unknown property \(expected one of: model, root, batch/);
  assert.is(errorOf('d.yaml', 'networks: { m: { model: mobilenet } }\n'), "d.yaml: missing required property 'targets'");
  assert.is(errorOf('e.yaml', GOOD.replace('model: mobilenet', 'model: mobilenet, layout: nhwc')), 'e.yaml: networks.mobilenet.layout: expected one of "NHWC", "NCHW", got "nhwc"');
});

test('cross-checks: names, target strings, models', () => {
  assert.match(errorOf('f.yaml', `${GOOD}defaults: { target: gpu }\n`), /^f\.yaml: defaults\.target: unknown target "gpu" \(expected one of: cpu\)$/);
  assert.match(errorOf('g.yaml', GOOD.replace('llvm -mcpu=native', 'vulkan')), /^g\.yaml: targets\.cpu\.target: unsupported target kind 'vulkan'/);
  assert.match(errorOf('h.yaml', GOOD.replace('model: mobilenet', 'model: mobilenett')), /^h\.yaml: networks\.mobilenet\.model: unknown builtin network "mobilenett" \(expected a path to an \.onnx file or one of: mobilenet, resnet-18/);
  // A missing model file is its network's error: the config loads, resolving that network fails.
  const missing = loadConfig(write('i.yaml', GOOD.replace('model: mobilenet, imageSize: 64', 'model: nets/x.onnx')), dir);
  assert.throws(() => resolveRun(missing, dir, 'mobilenet'), (e: Error) => e instanceof ConfigError && e.message === 'i.yaml: networks.mobilenet.model: model file "nets/x.onnx" not found (relative to i.yaml)');
  assert.match(errorOf('j.yaml', GOOD.replace('tiny:', 'cpu:')), /^j\.yaml: budgets\.cpu: 'cpu' is also a target name/);
  assert.match(errorOf('k.yaml', GOOD.replace('threads: 2', 'threads: 2, runner: ssh board')), /^k\.yaml: targets\.cpu\.runner: expected a command template containing \{command\}/);
  assert.match(errorOf('k2.yaml', GOOD.replace('threads: 2', 'threads: 2, runners: ["ssh a {command}", "ssh b"]')), /^k2\.yaml: targets\.cpu\.runners\[1\]: expected a command template containing \{command\}, got "ssh b"$/);
  assert.is(errorOf('k3.yaml', GOOD.replace('threads: 2', 'threads: 2, runner: "ssh a {command}", runners: ["ssh b {command}"]')), 'k3.yaml: targets.cpu.runners: give runner (one device) or runners (a pool), not both');
});

test('one vocabulary with the CLI: measuresPerRound (batchSize: its former name) and measure.timeout in seconds (timeoutMs: the former), never both', () => {
  loadConfig(write('n.yaml', GOOD.replace('tiny: { trialsPerTask: 2 }', 'tiny: { trialsPerTask: 2, measuresPerRound: 4, measure: { timeout: 5 } }')), dir);
  loadConfig(write('o.yaml', GOOD.replace('tiny: { trialsPerTask: 2 }', 'tiny: { trialsPerTask: 2, batchSize: 4, measure: { timeoutMs: 5000 } }')), dir);
  assert.is(errorOf('p.yaml', GOOD.replace('tiny: { trialsPerTask: 2 }', 'tiny: { measuresPerRound: 4, batchSize: 4 }')),
    'p.yaml: budgets.tiny.batchSize: is the former name of measuresPerRound; give one of them');
  assert.is(errorOf('q.yaml', GOOD.replace('tiny: { trialsPerTask: 2 }', 'tiny: { measure: { timeout: 5, timeoutMs: 5000 } }')),
    'q.yaml: budgets.tiny.measure.timeoutMs: is the former spelling of timeout (seconds); give one of them');
});

test('GPU targets: hardwareParams become options of the target string, as on the command line; host is the CPU side', () => {
  const gpus = GOOD.replace('  cpu: { target: llvm -mcpu=native, threads: 2 }\n', [
    '  cpu: { target: llvm -mcpu=native, threads: 2 }',
    '  mali: { target: opencl -device=mali, host: llvm -mtriple=aarch64-linux-gnu, hardwareParams: { warpSize: 4, maxThreadsPerBlock: 128 } }',
    '  pocl: { target: opencl }',
    '',
  ].join('\n'));
  const { config } = loadConfig(write('gpu.yaml', gpus), dir);
  assert.is(config.targets.mali.target, parseTarget('opencl -device=mali -thread_warp_size=4 -max_threads_per_block=128', '--target').text);
  assert.is(config.targets.mali.target, 'opencl -device=mali -max_threads_per_block=128 -thread_warp_size=4');
  assert.is(config.targets.mali.host, 'llvm -mtriple=aarch64-linux-gnu');
  assert.is(config.targets.pocl.target, 'opencl');
  assert.is(config.targets.cpu.target, 'llvm -mcpu=native');
  assert.is(resolveRun(loadConfig('gpu.yaml', dir), dir, 'mobilenet', 'mali').target.target, 'opencl -device=mali -max_threads_per_block=128 -thread_warp_size=4');

  const raw = { targets: { g: { target: 'opencl', hardwareParams: { maxVthreadExtent: 2 } } }, networks: { m: { model: 'mobilenet' } } };
  assert.is(validateConfig(raw, 'x.json', dir).targets.g.target, 'opencl -max_vthread_extent=2');
  assert.is(raw.targets.g.target, 'opencl', 'what was read is not changed');

  const with_ = (entry: string): string => GOOD.replace('cpu: { target: llvm -mcpu=native, threads: 2 }', `cpu: ${entry}`);
  assert.is(errorOf('r.yaml', with_('{ target: opencl, hardwareParams: { warpSize: 0 } }')), 'r.yaml: targets.cpu.hardwareParams.warpSize: expected a number >= 1, got 0');
  assert.match(errorOf('s.yaml', with_('{ target: opencl, hardwareParams: { warp: 4 } }')), /^s\.yaml: targets\.cpu\.hardwareParams\.warp: unknown property \(expected one of: maxThreadsPerBlock, /);
  assert.is(errorOf('t.yaml', with_('{ target: opencl, hardwareParams: { vectorUnitBytes: 12 } }')), 't.yaml: targets.cpu.hardwareParams.vectorUnitBytes: expected a power of two from 4 to 256, got 12');
  assert.is(errorOf('u.yaml', with_('{ target: opencl -thread_warp_size=2, hardwareParams: { warpSize: 4 } }')),
    'u.yaml: targets.cpu.hardwareParams.warpSize: the target string "opencl -thread_warp_size=2" gives -thread_warp_size already; give it once');
  assert.is(errorOf('v.yaml', with_('{ target: llvm, hardwareParams: { warpSize: 4 } }')), 'v.yaml: targets.cpu.hardwareParams: hardware parameters apply to GPU targets (opencl, cuda); "llvm" is a CPU target');
  assert.match(errorOf('w.yaml', with_('{ target: llvm, host: llvm }')), /^w\.yaml: targets\.cpu\.host: a host applies to GPU targets \(opencl, cuda\) only/);
  assert.match(errorOf('x.yaml', with_('{ target: opencl, host: opencl }')), /^x\.yaml: targets\.cpu\.host: the host of a GPU target is a CPU target/);
  assert.match(errorOf('y.yaml', with_('{ target: opencl -device=adreno }')), /^y\.yaml: targets\.cpu\.target: unknown OpenCL device '-device=adreno'/);
});

test('a file that does not parse names the file', () => {
  assert.match(errorOf('l.yaml', 'targets: [\n'), /^l\.yaml: cannot be parsed: /);
  assert.is(errorOf('m.yaml', ''), 'm.yaml: the file is empty (expected networks and targets)');
  assert.throws(() => loadConfig('missing.yaml', dir), /missing\.yaml: file not found/);
});

test('resolveRun: unknown names are ConfigErrors listing what exists', () => {
  const loaded = loadConfig(write('tensortune.config.yaml', GOOD), dir);
  assert.throws(() => resolveRun(loaded, dir, 'resnet'), /no network 'resnet' \(expected one of: mobilenet\)/);
  assert.throws(() => resolveRun(loaded, dir, 'mobilenet', 'gpu'), /target 'gpu' is not one of this network's targets \(cpu\)/);
  assert.throws(() => resolveRun(loaded, dir, 'mobilenet', undefined, 'huge'), /no budget 'huge' \(expected one of: tiny, full\)/);
});

test('extends: targets, budgets and defaults come from the other file (own entries win), records and outDir relative to it; networks are the file\'s own', () => {
  mkdirSync(path.join(dir, 'nets', 'a'), { recursive: true });
  write('base.yaml', 'records: shared/records\ndefaults: { target: cpu, budget: tiny }\ntargets:\n  cpu: { target: llvm }\nbudgets:\n  tiny: { trialsPerTask: 2 }\nnetworks:\n  other: { model: vgg-11 }\n');
  write('nets/a/tensortune.config.yaml', 'extends: ../../base.yaml\nbudgets:\n  tiny: { trialsPerTask: 5 }\n  big: { trialsPerTask: 50 }\nnetworks:\n  a: { model: mobilenet, root: . }\n');
  const loaded = loadConfig('nets/a/tensortune.config.yaml', dir);
  assert.equal(Object.keys(loaded.config.networks), ['a']);
  assert.is(loaded.base, path.join(dir, 'base.yaml'));
  assert.equal(loaded.config.budgets, { tiny: { trialsPerTask: 5 }, big: { trialsPerTask: 50 } });
  const run = resolveRun(loaded, dir, 'a');
  assert.is(run.targetName, 'cpu');
  assert.is(run.budgetName, 'tiny');
  assert.is(run.recordsFile, path.join(dir, 'shared', 'records', 'a.cpu.jsonl'));
  assert.is(run.modelDir, path.join(dir, 'dist', 'tensortune', 'a', 'cpu'), 'outDir: the extended file\'s default, relative to it');
});

test('extends: a missing, escaping, self-naming or chained file, and a mistake inside the extended file, are one message each', () => {
  mkdirSync(path.join(dir, 'x'), { recursive: true });
  const net = 'networks:\n  n: { model: mobilenet }\n';
  assert.is(errorOf('x/a.yaml', `extends: nope.yaml\n${net}`), 'x/a.yaml: extends: config file "nope.yaml" not found (relative to x/a.yaml)');
  assert.match(errorOf('x/b.yaml', `extends: ../../../../etc/passwd\n${net}`), /^x\/b\.yaml: extends: expected a config file inside the workspace .*, got "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd"$/);
  assert.is(errorOf('x/c.yaml', `extends: c.yaml\n${net}`), 'x/c.yaml: extends: names this file itself; expected another config file');
  write('x/mid.yaml', 'extends: ../base.yaml\n');
  assert.is(errorOf('x/d.yaml', `extends: mid.yaml\n${net}`), 'x/d.yaml: extends: x/mid.yaml extends another file itself; a config may extend one that extends none');
  write('x/badbase.yaml', 'targets:\n  cpu: { target: llvm, threads: zero }\n');
  assert.match(errorOf('x/e.yaml', `extends: badbase.yaml\n${net}`), /^x\/badbase\.yaml: targets\.cpu\.threads: expected an integer, got "zero"$/);
  write('x/notargets.yaml', 'budgets:\n  tiny: { trialsPerTask: 2 }\n');
  assert.is(errorOf('x/f.yaml', `extends: notargets.yaml\n${net}`), "x/notargets.yaml: missing required property 'targets'");
  assert.is(errorOf('x/g.yaml', `extends: 3\n${net}`), 'x/g.yaml: extends: expected a string, got 3');
  assert.is(errorOf('x/h.yaml', `extends: ../base.yaml\nnetworks:\n  n: { model: mobilenet, targets: [gpu] }\n`), 'x/h.yaml: networks.n.targets[0]: unknown target "gpu" (expected one of: cpu)');
});

test('a file of targets and budgets without networks loads (what per-project files extend)', () => {
  const loaded = loadConfig(write('only-targets.yaml', 'targets:\n  cpu: { target: llvm }\n'), dir);
  assert.equal(loaded.config.networks, {});
});

test.run();
