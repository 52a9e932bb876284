// `tensortune export <network> --out model.onnx`: write a builtin network, with its
// weights, as an ONNX model (opset 14; 17 for the transformers), e.g. to compare with ONNX Runtime or to compile
// it back from the file.

import { UserError } from '../errors';
import { getNetwork, NETWORK_NAMES, networkSuggestion } from '../frontend/networks';
import { writeOnnxFile } from '../frontend/onnx/export';
import { withoutSoftmax } from '../compare/compare';
import { aliased, MODEL_FLAGS, modelFlags, parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune export <network> --out model.onnx [--layout NCHW|NHWC] [--batch N] [--image-size N]
                         [--seed S] [--random-stats] [--logits] [--opset 13..17]

Write a builtin network and its weights as an ONNX model (opset 14; 17 for vit-s16 and
bert-base, whose LayerNorms are LayerNormalization nodes there; --opset 13 writes them
decomposed, as exporters do for older opsets).

Options:
  --out FILE          the .onnx file to write (required; tvmc's --output/-o is accepted)
  --layout NCHW|NHWC  layout of the model's input and output (default NCHW, ONNX's own);
                      NHWC writes NCHW operators between Transpose nodes
  --batch N           batch size (default 1)
  --image-size N      input height = width (default: the network's, 224 or 299)
  --input-shapes S    tvmc's spelling of --batch and --image-size: "data:[1,3,224,224]"
  --seed S            weight seed (default 0, the weights 'compile <network>' uses)
  --random-stats      non-trivial batch-norm statistics instead of TVM's identity ones
  --logits            drop the final softmax (the model outputs logits)
  --opset N           the opset to write, 13 to 17
  -h, --help          show this help

Networks: ${NETWORK_NAMES.join(', ')}
`;

export const exportCommand: Command = {
  name: 'export',
  summary: 'write a builtin network with its weights as an ONNX model',
  run(argv: readonly string[], io: CliIo): number {
    const { values, positionals } = parseFlags(argv, {
      out: { type: 'string' }, output: { type: 'string', short: 'o' }, ...MODEL_FLAGS,
      seed: { type: 'string' }, 'random-stats': { type: 'boolean' }, logits: { type: 'boolean' }, opset: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length !== 1) throw new UserError(`expected one network name (one of: ${NETWORK_NAMES.join(', ')})`);
    const out = aliased(values, 'out', 'output');
    if (!out) throw new UserError('--out FILE is required (the .onnx file to write)');
    if (!out.toLowerCase().endsWith('.onnx')) throw new UserError(`--out ${out}: expected a file name ending in .onnx`);
    const seed = values.seed === undefined ? 0 : Number(values.seed);
    if (!/^\d+$/.test(values.seed ?? '0') || seed > 0xffffffff) throw new UserError(`bad --seed '${values.seed}' (expected an integer in [0, 2^32))`);
    const name = positionals[0];
    if (!NETWORK_NAMES.includes(name)) throw new UserError(`unknown network ${JSON.stringify(name)} (expected one of: ${NETWORK_NAMES.join(', ')})${networkSuggestion(name)}`);
    const net = getNetwork(positionals[0], { ...modelFlags(values, positionals, 'NCHW'), seed, randomStats: values['random-stats'] ?? false });
    const graph = values.logits ? withoutSoftmax(net.graph) : net.graph;
    if (values.opset !== undefined && !/^(1[3-7])$/.test(values.opset)) throw new UserError(`bad --opset '${values.opset}' (expected 13 to 17)`);
    const opset = values.opset !== undefined ? Number(values.opset) : graph.nodes.some((n) => n.op === 'layer_norm') ? 17 : undefined;
    try {
      writeOnnxFile(out, graph, { name: net.name, opset });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code) throw new UserError(`--out ${out}: cannot write (${code})`);
      throw e;
    }
    io.out(`wrote ${out} (${net.name}, input${net.inputs.length > 1 ? 's' : ''} ${net.inputs.map((i) => `${i.name} [${i.shape.join(', ')}]`).join(', ')})\n`);
    return 0;
  },
};
