import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RandomSource } from './annotate';
import { factorizations } from './factors';
import { Rng } from './rng';

test('vectorised tiles favour whole vectors; other tiles stay uniform over the factorisations', () => {
  const share = (src: RandomSource, vector: boolean): number => {
    let whole = 0;
    for (let i = 0; i < 2000; i++) {
      const f = src.tile('k', 128, 4, 64, vector);
      assert.is(f.reduce((a, b) => a * b, 1), 128);
      if (f[3] % 16 === 0) whole++;
    }
    return whole / 2000;
  };
  const uniform = factorizations(128, 4, 64).filter((f) => f[3] % 16 === 0).length / factorizations(128, 4, 64).length;
  assert.ok(uniform < 0.5, `whole-vector factorisations are a minority (${uniform})`);
  assert.ok(share(new RandomSource(new Rng(1), 16), true) > 0.8, 'vectorised: mostly whole vectors');
  assert.ok(Math.abs(share(new RandomSource(new Rng(1), 16), false) - uniform) < 0.05, 'not vectorised: uniform');
  assert.ok(Math.abs(share(new RandomSource(new Rng(1)), true) - uniform) < 0.05, 'no vector width known: uniform');
});

test.run();
