// A conformance worker's preload in run.test.ts (RunOptions.workerPreload): our own code made
// to loop forever, as a bug would, while importing a case named test_hang_import (reading its
// model file) or while compiling a batch holding a tensor named *hang_here* (writing its
// manifest), so that the runner's limits on its workers can be seen to classify such cases as
// hung without stalling the run.

import fs from 'node:fs';

const readFileSync = fs.readFileSync;
fs.readFileSync = ((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
  if (String(file).includes('test_hang_import')) for (;;) { /* a bug */ }
  return (readFileSync as (...a: unknown[]) => unknown)(file, ...rest);
}) as typeof fs.readFileSync;

const stringify = JSON.stringify;
JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
  const text = stringify(...args);
  if (text?.includes('hang_here') && text.includes('"outputs"')) for (;;) { /* a bug */ }
  return text;
}) as typeof JSON.stringify;
