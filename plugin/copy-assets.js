// Build step after tsc: copy what tsc does not emit into dist/: the executor and
// generator schema.json files (next to the implementations executors.json and
// generators.json point at) and schemas/*.json (the config schema the plugin requires).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
let copied = 0;
for (const dir of ['executors', 'generators']) {
  for (const name of fs.readdirSync(path.join(root, dir))) {
    const from = path.join(root, dir, name, 'schema.json');
    if (!fs.existsSync(from)) continue;
    const to = path.join(root, 'dist', dir, name, 'schema.json');
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(from, to);
    copied++;
  }
}
for (const name of fs.readdirSync(path.join(root, 'schemas')).filter((n) => n.endsWith('.json'))) {
  fs.mkdirSync(path.join(root, 'dist', 'schemas'), { recursive: true });
  fs.copyFileSync(path.join(root, 'schemas', name), path.join(root, 'dist', 'schemas', name));
  copied++;
}
console.log(`copied ${copied} schema file(s) into dist/`);
