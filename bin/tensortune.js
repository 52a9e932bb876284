#!/usr/bin/env node
// The `tensortune` command: the compiled CLI when the package is built (dist/), else the
// TypeScript sources through tsx (a development checkout).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const built = path.join(__dirname, '..', 'dist', 'engine', 'cli.js');
let cli;
if (fs.existsSync(built)) {
  cli = require(built);
} else {
  require('tsx/cjs');
  cli = require(path.join(__dirname, '..', 'engine', 'cli.ts'));
}
cli.run(process.argv.slice(2));
