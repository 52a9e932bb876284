// preTasksExecution's checks on the nx command lines users type, over a project graph as
// the plugin infers it: what Nx would drop for a tensortune target (-c ful, --target,
// --batch N, --batch-size) is refused in one line before any task runs or is restored from
// the cache; other projects' commands and Nx's own flags pass.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../engine/errors';
import { parseNxFlags } from './nx-args';
import { checkNxCommand, namedTargets } from './pre-tasks';

const configurations = { tiny: { budget: 'tiny' }, full: { budget: 'full' }, cpu: { configTarget: 'cpu' }, avx2: { configTarget: 'avx2' },
  'cpu-tiny': { configTarget: 'cpu', budget: 'tiny' }, 'cpu-full': { configTarget: 'cpu', budget: 'full' } };
const tensortune = (network: string, configs: Record<string, object>) => Object.fromEntries(['tune', 'compile', 'benchmark'].map((t) => [t, {
  executor: `tensortune:${t}`, options: { config: 'tensortune.config.yaml', network, configTarget: 'cpu' }, configurations: configs,
}]));
const graph = {
  nodes: {
    mobilenet: { name: 'mobilenet', type: 'app' as const, data: { root: 'models/mobilenet', targets: tensortune('mobilenet', configurations) } },
    small: { name: 'small', type: 'app' as const, data: { root: 'models/small', targets: tensortune('small', { tiny: {}, full: {}, cpu: { configTarget: 'cpu' } }) } },
    app: { name: 'app', type: 'app' as const, data: { root: 'apps/app', targets: { build: { executor: 'nx:run-commands', configurations: { production: {} } }, tune: { executor: 'nx:noop' } } } },
  },
};

const check = (line: string): void => checkNxCommand(parseNxFlags(line.split(' ')), graph);
const refused = (line: string, pattern: RegExp): void => {
  try {
    check(line);
  } catch (e) {
    assert.instance(e, UserError);
    assert.match((e as Error).message, pattern, line);
    assert.not.match((e as Error).message, /\n/);
    return;
  }
  assert.unreachable(`nx ${line} was not refused`);
};

test('namedTargets: the tensortune targets of nx <target> <project>, nx run and run-many', () => {
  const named = (line: string) => { const r = namedTargets(parseNxFlags(line.split(' ')), graph); return [r.named.map((n) => `${n.project}:${n.target}`), r.projectsNamed]; };
  assert.equal(named('tune mobilenet'), [['mobilenet:tune'], true]);
  assert.equal(named('tune'), [['mobilenet:tune', 'small:tune'], false], 'the project comes from the folder: any of them');
  assert.equal(named('run small:compile:full'), [['small:compile'], true]);
  assert.equal(named('run-many -t tune,benchmark -p mobilenet'), [['mobilenet:tune', 'mobilenet:benchmark'], true]);
  assert.equal(named('run-many -t compile'), [['mobilenet:compile', 'small:compile'], true]);
  assert.equal(named('build app'), [[], true]);
  assert.equal(named('tune app'), [[], true], 'a target of that name with another executor');
});

test('-c <name> the target does not define: refused with the configurations it has', () => {
  refused('tune mobilenet -c ful',
    /^tensortune tune: -c ful: mobilenet:tune has no configuration 'ful' \(expected one of: tiny, full, cpu, avx2, cpu-tiny, cpu-full: the targets and budgets of tensortune\.config\.yaml, and <target>-<budget>\)$/);
  refused('benchmark mobilenet --configuration=ful', /^tensortune benchmark: -c ful: mobilenet:benchmark has no configuration 'ful'/);
  refused('compile mobilenet --prod', /^tensortune compile: -c production: mobilenet:compile has no configuration 'production'/);
  refused('run mobilenet:tune:ful', /^tensortune tune: -c ful: /);
  refused('run-many -t tune -c avx2', /^tensortune tune: -c avx2: small:tune has no configuration 'avx2' \(expected one of: tiny, full, cpu: /);
  refused('tune -c gpu', /^tensortune tune: -c gpu: mobilenet:tune has no configuration 'gpu'/);
  check('tune mobilenet -c full');
  check('run mobilenet:tune:cpu-full');
  check('run-many -t tune -c full');
  check('run-many -t tune -c avx2 -p mobilenet');
  check('tune -c avx2'); // in models/mobilenet: one of the projects with a tune target defines it
  check('build app -c production');
});

test('--target where Nx ignores it, --batch N, flags Nx swallows: refused; run-many -t and Nx\'s own flags pass', () => {
  refused('compile mobilenet --target nosuch',
    /^tensortune compile: --target nosuch: Nx takes --target for itself \(the target to run\) and ignores it here; choose a target of tensortune\.config\.yaml with -c nosuch or --config-target nosuch \(mobilenet's: cpu, avx2\)$/);
  refused('tune mobilenet --target=avx2', /^tensortune tune: --target avx2: .* -c avx2 or --config-target avx2/);
  refused('run mobilenet:compile -t cpu', /^tensortune compile: --target cpu: Nx takes --target/);
  refused('tune mobilenet --trials-per-task 3 --batch 4', /^tensortune tune: --batch 4: Nx takes --batch for itself \(its batch mode\); the model's batch is networks\.mobilenet\.batch in tensortune\.config\.yaml$/);
  refused('tune mobilenet --batch-size 4',
    /^tensortune tune: --batch-size: Nx's parser takes it for one of its own flags and drops it; candidates measured per round are --measures-per-round \(nx tune takes: --config-target, --budget, --trials, /);
  check('run-many -t compile --skip-nx-cache --parallel=2 --output-style=static');
  check('tune mobilenet --verbose --exclude-task-dependencies --skipNxCache --no-tui');
  check('build app --target x --batch 4 --batch-size 4 --foo'); // not a tensortune target
});

test('options the target\'s executor does not take: refused before anything runs, as the executor words it', () => {
  refused('benchmark mobilenet --trials-per-task 3',
    /^tensortune benchmark: unknown option --trials-per-task \(nx benchmark takes: --config-target, --repeat, --number, --min-repeat-ms, --threads, --seed, --input, --save-outputs, --profile, --compare, --untuned, and -c <configuration>\)$/);
  refused('tune mobilenet --image-size 64', /^tensortune tune: --image-size: the model is networks\.mobilenet in tensortune\.config\.yaml; set imageSize there/);
  refused('run mobilenet:compile --records=x.jsonl', /^tensortune compile: --records: nx compile reads the record store/);
  refused('tune mobilenet --trialsPerTask 3 --polcy random', /^tensortune tune: unknown option --polcy /);
  check('tune mobilenet --trials-per-task 3 --policy random --measures-per-round 4 --timeout 5 --flush --no-flush --seed=2');
  check('compile mobilenet --watch --strict --timeout 30');
  check('benchmark mobilenet --repeat 3 --save-outputs outs --input data=x.bin');
  check('run-many -t benchmark --trials-per-task 3'); // run-many: the executors check their options
});

test('--shard on the command line: refused (the plugin sets it on each tune--<k> target; Nx would forward it to every shard)', () => {
  refused('tune mobilenet --shard 2', /^tensortune tune: --shard: the plugin sets the shard of each tune--<k> target; run one shard with `nx run mobilenet:tune--<k>`/);
  refused('run-many -t tune --shard=1', /^tensortune tune: --shard: the plugin sets the shard/);
  check('compile mobilenet --watch');
});

test.run();
