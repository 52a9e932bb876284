// Test helper run as a separate process by hostile-config.test.ts: createNodes on the
// workspace `root` for the given config files, as Nx calls it; prints one JSON object on
// stdout: the projects of each file and the warnings the plugin logged.

process.env.NX_CACHE_PROJECT_GRAPH = 'false';
import { createNodes } from './index';

const [root, ...files] = process.argv.slice(2);
const warnings: string[] = [];
const { warn } = console;
console.warn = (...a: unknown[]): void => { warnings.push(a.join(' ')); };

async function main(): Promise<void> {
  const results = await createNodes[1](files, undefined, { workspaceRoot: root!, nxJsonConfiguration: {} });
  console.warn = warn;
  process.stdout.write(`${JSON.stringify({ results: Object.fromEntries(results), warnings })}\n`);
}

main().catch((e: unknown) => { console.warn = warn; console.error(e); process.exitCode = 1; });
