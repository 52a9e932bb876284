// The Nx plugin entry (nx.json: "plugins": ["tensortune/plugin"]). Nx 24 calls the batched
// `createNodes`; `createNodesV2` is the deprecated alias older Nx versions look for.

export { createNodes, CONFIG_GLOB } from './create-nodes';
export type { TensortunePluginOptions } from './targets';
import { createNodes } from './create-nodes';

export const createNodesV2 = createNodes;
