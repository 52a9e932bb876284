// What Nx takes from the command line: parseNxFlags on the forms users type, the list of
// Nx's own run options against the installed Nx's parser, and no executor option that
// Nx's parser would take for itself (each must reach the executor as typed).

import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { executorOptions, type ExecutorName } from '../executors/options';
import { honoursTargetFlag, nxArguments, NX_RUN_OPTIONS, parseNxFlags } from './nx-args';

const kebab = (k: string): string => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

test('nxArguments: the arguments after nx, from the command lines npx and node give the nx process', () => {
  assert.equal(nxArguments(['node', '/w/node_modules/.bin/nx', 'tune', 'x', '-c', 'full']), ['tune', 'x', '-c', 'full']);
  assert.equal(nxArguments(['/usr/bin/node', '/w/node_modules/nx/bin/nx.js', 'run-many', '-t', 'tune']), ['run-many', '-t', 'tune']);
  assert.is(nxArguments(['node', '/w/node_modules/uvu/bin.js', '-r', 'tsx', 'executors']), undefined);
  assert.is(nxArguments(['node', '/w/x.js', 'a', 'b', 'nx']), undefined, 'only the program or its script');
});

test('parseNxFlags: configurations, --target, --batch N, swallowed flags and overrides, in the forms users type', () => {
  const p = (line: string) => parseNxFlags(line.split(' '));
  assert.equal(p('tune mobilenet -c ful --trials-per-task 3 --flush --policy=random'), {
    positionals: ['tune', 'mobilenet'], configuration: 'ful', targets: [], projects: [], swallowed: [], overrides: ['--trials-per-task', '--flush', '--policy'],
  });
  assert.is(p('tune mobilenet --configuration=full').configuration, 'full');
  assert.is(p('tune mobilenet -c=cpu-full').configuration, 'cpu-full');
  assert.is(p('tune mobilenet --prod').configuration, 'production');
  assert.is(p('run mobilenet:tune:full').configuration, 'full');
  assert.is(p('run mobilenet:tune:full -c tiny').configuration, 'tiny', '-c wins over the colon form, as in Nx');
  assert.is(p('run mobilenet:tune').configuration, undefined);
  assert.equal(p('compile mobilenet --target nosuch').targets, ['nosuch']);
  assert.equal(p('tune mobilenet --target=avx2').targets, ['avx2']);
  assert.equal(p('run-many -t tune,compile -c full -p a,b'), {
    positionals: ['run-many'], configuration: 'full', targets: ['tune', 'compile'], projects: ['a', 'b'], swallowed: [], overrides: [],
  });
  assert.equal(p('tune mobilenet --batch 4').batch, '4');
  assert.is(p('run-many -t tune --batch').batch, undefined, 'Nx\'s own --batch (batch mode) is not refused');
  assert.equal(p('tune mobilenet --batch-size 4 --trials-per-task 3').swallowed, ['--batch-size']);
  const nxOwn = p('tune mobilenet --target-string=x --exclude-task-dependencies --skip-nx-cache --skipNxCache --no-tui --output-style static --parallel=2 --verbose');
  assert.equal([nxOwn.swallowed, nxOwn.overrides, nxOwn.positionals], [['--target-string'], [], ['tune', 'mobilenet']]);
  assert.equal(p('tune mobilenet -- -c full --target x'), { positionals: ['tune', 'mobilenet'], targets: [], projects: [], swallowed: [], overrides: [] }, 'nothing after --');
  assert.equal(p('-p mobilenet tune').positionals, ['tune']);
  assert.ok(honoursTargetFlag('run-many') && honoursTargetFlag('affected'));
  assert.not.ok(honoursTargetFlag('tune') || honoursTargetFlag('run') || honoursTargetFlag(undefined));
});

// Nx's own parser for `nx <target> <project>` (and `nx run`), as nx/src/command-line/run/command-object.js builds it.
const nxRequire = createRequire(require.resolve('nx/package.json'));
type Yargs = { getOptions(): { key: Record<string, unknown>; alias: Record<string, string[]> }; command(c: string, d: string): Yargs; parseSync(): Record<string, unknown> };
const shared = nxRequire('nx/src/command-line/yargs-utils/shared-options') as Record<string, (y: Yargs) => Yargs>;
const yargs = nxRequire('yargs') as (args: string[]) => Yargs;
const nxParser = (args: string[]): Yargs => shared.withTuiOptions(shared.withRunOneOptions(shared.withBatch(yargs(args)))).command('$0 <target> [project] [_..]', 'run');

test('NX_RUN_OPTIONS is what the installed Nx parses for itself (an Nx upgrade that adds one fails here)', () => {
  const o = nxParser([]).getOptions();
  const names = new Set([...Object.keys(o.key), ...Object.values(o.alias).flat()].map(kebab));
  assert.equal([...names].sort(), [...NX_RUN_OPTIONS].sort());
});

test('every executor option reaches the executor: Nx\'s parser neither owns it nor takes it for one of its own', () => {
  for (const name of ['tune', 'compile', 'benchmark'] as ExecutorName[]) {
    for (const option of executorOptions(name)) {
      const f = kebab(option);
      assert.not.ok(NX_RUN_OPTIONS.includes(f), `${name}: --${f} is Nx's`);
      const parsed = nxParser(['tune', 'mobilenet', `--${f}`, '1']).parseSync();
      assert.equal(parsed._, [`--${f}`, '1'], `${name}: nx passes --${f} on as an override`);
    }
  }
  // What the executors refuse in words of their own, since Nx never passes it on.
  assert.equal(nxParser(['tune', 'x', '--batch-size', '4']).parseSync()._, []);
  assert.equal(nxParser(['tune', 'x', '--target', 'avx2']).parseSync().target, 'tune');
});

test.run();
