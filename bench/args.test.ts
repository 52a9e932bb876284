import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BenchArgsError, parseBenchArgs, type BenchArgs } from './args';

const defaults = { networks: 'mobilenet,resnet-18', rounds: '5', threads: '1,2', records: '', scale: '0.5' };
const shape = { switches: ['flush'], repeated: ['workload'] };
const parse = (argv: string[], positionals = 0): BenchArgs => {
  const a = parseBenchArgs('bench/x.ts', defaults, { ...shape, positionals }, argv);
  if (a === 'help') throw new Error('unexpected help');
  return a;
};
const throwsWith = (fn: () => unknown, pattern: RegExp): void => {
  try {
    fn();
  } catch (e) {
    assert.instance(e, BenchArgsError);
    assert.match((e as Error).message, pattern);
    return;
  }
  assert.unreachable(`expected an error matching ${pattern}`);
};

test('defaults, given values, lists and numbers', () => {
  const a = parse(['--rounds', '10', '--networks', 'resnet-50,', '--records=a.jsonl']);
  assert.is(a.int('rounds'), 10);
  assert.equal(a.list('networks'), ['resnet-50']);
  assert.equal(a.ints('threads'), [1, 2]);
  assert.is(a.str('records'), 'a.jsonl');
  assert.is(a.num('scale'), 0.5);
  assert.is(parse([]).optInt('records'), undefined, 'an empty flag is "not given"');
  assert.is(parse(['--records', '112']).optInt('records'), 112);
  throwsWith(() => parse(['--records', '0']).optInt('records'), /--records: expected a positive integer, got "0"/);
  assert.equal(parse(['DIR_A', '--rounds', '3', 'DIR_B'], 2).positionals, ['DIR_A', 'DIR_B']);
});

test('switches and repeated flags', () => {
  const a = parse(['--flush', '--workload', 'k1', '--workload', 'k2']);
  assert.ok(a.on('flush'));
  assert.equal(a.all('workload'), ['k1', 'k2']);
  const b = parse([]);
  assert.not.ok(b.on('flush'));
  assert.equal(b.all('workload'), []);
  throwsWith(() => parse(['--flush=yes']), /^bench\/x\.ts: .*--flush/);
});

test('--help and -h ask for the usage instead of running', () => {
  assert.is(parseBenchArgs('bench/x.ts', defaults, {}, ['--rounds', '3', '--help']), 'help');
  assert.is(parseBenchArgs('bench/x.ts', defaults, {}, ['-h']), 'help');
});

test('bad flags name the script and the flag', () => {
  throwsWith(() => parse(['--round', '10']), /^bench\/x\.ts: .*'--round'/);
  throwsWith(() => parse(['--rounds']), /^bench\/x\.ts: .*--rounds/);
  throwsWith(() => parse(['stray']), /bench\/x\.ts: .*stray/);
  throwsWith(() => parse(['A'], 2), /expected 2 argument\(s\) besides the flags, got 1/);
  throwsWith(() => parse(['--rounds', 'ten']).int('rounds'), /--rounds: expected a positive integer, got "ten"/);
  throwsWith(() => parse(['--rounds', '0']).int('rounds'), /--rounds: expected a positive integer, got "0"/);
  throwsWith(() => parse(['--threads', '1,x']).ints('threads'), /--threads: expected a positive integer, got "x"/);
  throwsWith(() => parse(['--scale=-1']).num('scale'), /--scale: expected a non-negative number, got "-1"/);
});

test.run();
