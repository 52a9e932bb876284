#!/usr/bin/env node
// The `tensortune` command: the TypeScript sources through tsx in a development checkout
// (engine/cli.ts present, so edits take effect without a build), else the compiled CLI
// in dist/ (the published package ships dist/ and not the sources).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const source = path.join(__dirname, '..', 'engine', 'cli.ts');
let cli;
if (fs.existsSync(source)) {
  require('tsx/cjs');
  cli = require(source);
} else {
  cli = require(path.join(__dirname, '..', 'dist', 'engine', 'cli.js'));
}
cli.run(process.argv.slice(2));
