// The Nx plugin entry (nx.json: "plugins": ["tensortune/plugin"]). Nx 24 calls the batched
// `createNodes`; `createNodesV2` is the deprecated alias older Nx versions look for;
// `preTasksExecution` refuses the flags Nx would drop before any task runs (pre-tasks.ts).

export { createNodes, CONFIG_GLOB } from './create-nodes';
export { preTasksExecution } from './pre-tasks';
export type { TensortunePluginOptions } from './targets';
import { createNodes } from './create-nodes';

export const createNodesV2 = createNodes;
