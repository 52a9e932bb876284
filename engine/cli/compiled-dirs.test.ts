// `tensortune benchmark models/mobilenet`: a folder without a compiled model is refused in
// one line that points at the compiled folders of the Nx workspace that name it.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../errors';
import { checkCompiledDir, compiledFoldersFor } from './compiled-dirs';

const ws = mkdtempSync(path.join(tmpdir(), 'tt-compiled-dirs-'));
const touch = (...parts: string[]): void => {
  mkdirSync(path.join(ws, ...parts.slice(0, -1)), { recursive: true });
  writeFileSync(path.join(ws, ...parts), '{}');
};
touch('nx.json');
touch('models', 'mobilenet', 'README.md');
touch('dist', 'tensortune', 'mobilenet', 'cpu', 'manifest.json');
touch('dist', 'tensortune', 'mobilenet', 'arm', 'manifest.json');
touch('dist', 'tensortune', 'resnet-18', 'cpu', 'manifest.json');

const message = (dir: string): string => {
  try {
    checkCompiledDir(dir);
  } catch (e) {
    assert.instance(e, UserError);
    return (e as Error).message;
  }
  return '';
};

test('the project folder of a network: the compiled folders of that network, and the command to run', () => {
  const dir = path.join(ws, 'models', 'mobilenet');
  assert.equal(compiledFoldersFor(dir), [path.join(ws, 'dist', 'tensortune', 'mobilenet', 'arm'), path.join(ws, 'dist', 'tensortune', 'mobilenet', 'cpu')]);
  const arm = path.relative(process.cwd(), path.join(ws, 'dist', 'tensortune', 'mobilenet', 'arm'));
  const cpu = path.relative(process.cwd(), path.join(ws, 'dist', 'tensortune', 'mobilenet', 'cpu'));
  assert.is(message(dir), `${dir}: no compiled model here (no manifest.json; expected a folder written by 'tensortune compile' or 'nx compile'); ` +
    `the compiled mobilenet is in ${arm}, ${cpu}: tensortune benchmark ${arm}`);
});

test('a compiled folder passes; a folder of the workspace that names nothing compiled says where nx compile writes', () => {
  assert.is(message(path.join(ws, 'dist', 'tensortune', 'mobilenet', 'cpu')), '');
  mkdirSync(path.join(ws, 'models', 'vgg-16'));
  assert.match(message(path.join(ws, 'models', 'vgg-16')), /no compiled model here .*; in an Nx workspace, 'nx compile <network>' writes it to <outDir>\/<network>\/<target>/);
});

test.after(() => rmSync(ws, { recursive: true, force: true }));

test.run();
