import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NETWORK_NAMES, networkSuggestion } from './frontend/networks';
import { closest, didYouMean, editDistance } from './suggest';

test('edit distance: insertions, deletions, substitutions and a swap of neighbours cost 1; case is ignored', () => {
  assert.is(editDistance('mobilnet', 'mobilenet'), 1);
  assert.is(editDistance('resnet50', 'resnet-50'), 1);
  assert.is(editDistance('tnue', 'tune'), 1);
  assert.is(editDistance('MobileNet', 'mobilenet'), 0);
  assert.is(editDistance('', 'abc'), 3);
});

test('closest: the nearest names when they look like a typo, nothing otherwise', () => {
  assert.equal(closest('mobilnet', NETWORK_NAMES), ['mobilenet']);
  assert.equal(closest('resnet50', NETWORK_NAMES), ['resnet-50']);
  assert.equal(closest('vgg16', NETWORK_NAMES), ['vgg-16']);
  assert.equal(closest('bert', NETWORK_NAMES), []);
  assert.equal(closest('resnet-19', NETWORK_NAMES), ['resnet-18']);
});

test('the clause: one name, or several joined with "or"', () => {
  assert.is(didYouMean('--trails', ['--trials', '--target']), 'did you mean --trials?');
  assert.is(didYouMean('ab', ['ac', 'ad', 'xy']), 'did you mean ac or ad?');
  assert.is(didYouMean('zzz', ['tune']), '');
  assert.is(networkSuggestion('mobilnet'), '; did you mean mobilenet?');
  assert.is(networkSuggestion('bert'), '');
});

test.run();
