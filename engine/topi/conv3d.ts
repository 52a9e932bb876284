// conv3d (TOPI `conv3d_ncdhw`, `conv3d_ndhwc`): NCDHW data with an OIDHW kernel, or NDHWC
// data with a DHWIO kernel; strides, dilations, explicit padding and groups (a group's
// kernel has I = C/groups input channels; depthwise is groups = C).

import { add, floordiv, load, mul, reduceAxis, sum, type Expr } from '../ir/expr';
import { compute, type Tensor } from '../ir/tensor';
import { windowOut } from './pool';
import { pad } from './transform';

export interface Conv3dParams {
  strides: [number, number, number];
  /** [front, top, left, back, bottom, right]: the begin pads of D, H, W, then their end pads. */
  padding: [number, number, number, number, number, number];
  dilation: [number, number, number];
}

const vr = (a: { name: string }): Expr => ({ k: 'var', name: a.name });
const tap = (o: Expr, stride: number, r: Expr, dil: number): Expr => add(mul(o, stride), mul(r, dil));

function outDims(dhw: readonly number[], k: readonly number[], p: Conv3dParams): number[] {
  return [0, 1, 2].map((i) => windowOut(dhw[i], k[i], p.strides[i], p.dilation[i], p.padding[i], p.padding[3 + i]));
}

function checkGroups(what: string, ci: number, kci: number, co: number, groups: number): void {
  if (kci * groups !== ci) throw new Error(`${what}: kernel has ${kci} input channels x ${groups} groups, data has ${ci}`);
  if (co % groups !== 0) throw new Error(`${what}: ${co} output channels not divisible into ${groups} groups`);
}

/** conv3d, data NCDHW, kernel OIDHW (O, I/groups, KD, KH, KW), output NCDHW. */
export function conv3dNCDHW(data: Tensor, kernel: Tensor, p: Conv3dParams, groups = 1): Tensor {
  const [n, ci, d, h, w] = data.shape;
  const [co, kci, kd, kh, kw] = kernel.shape;
  checkGroups('conv3d_ncdhw', ci, kci, co, groups);
  const [od, oh, ow] = outDims([d, h, w], [kd, kh, kw], p);
  const [pf, pt, pl, pk, pb, pr] = p.padding;
  const padded = pad(data, [0, 0, pf, pt, pl], [0, 0, pk, pb, pr], 'pad_temp');
  const rc = reduceAxis('rc', kci), rz = reduceAxis('rz', kd), ry = reduceAxis('ry', kh), rx = reduceAxis('rx', kw);
  const coPerGroup = co / groups;
  const [sd, sh, sw] = p.strides, [dd, dh, dw] = p.dilation;
  return compute(groups === 1 ? 'conv3d_ncdhw' : 'group_conv3d_ncdhw', [n, co, od, oh, ow], ['nn', 'ff', 'zz', 'yy', 'xx'], (nn, ff, zz, yy, xx) => {
    const c = groups === 1 ? vr(rc) : add(mul(floordiv(ff, coPerGroup), kci), vr(rc));
    return sum(mul(load(padded, [nn, c, tap(zz, sd, vr(rz), dd), tap(yy, sh, vr(ry), dh), tap(xx, sw, vr(rx), dw)]),
      load(kernel, [ff, vr(rc), vr(rz), vr(ry), vr(rx)])), [rc, rz, ry, rx]);
  }, 'conv3d_ncdhw');
}

/** conv3d, data NDHWC, kernel DHWIO (KD, KH, KW, I/groups, O), output NDHWC. */
export function conv3dNDHWC(data: Tensor, kernel: Tensor, p: Conv3dParams, groups = 1): Tensor {
  const [n, d, h, w, ci] = data.shape;
  const [kd, kh, kw, kci, co] = kernel.shape;
  checkGroups('conv3d_ndhwc', ci, kci, co, groups);
  const [od, oh, ow] = outDims([d, h, w], [kd, kh, kw], p);
  const [pf, pt, pl, pk, pb, pr] = p.padding;
  const padded = pad(data, [0, pf, pt, pl, 0], [0, pk, pb, pr, 0], 'pad_temp');
  const rz = reduceAxis('rz', kd), ry = reduceAxis('ry', kh), rx = reduceAxis('rx', kw), rc = reduceAxis('rc', kci);
  const coPerGroup = co / groups;
  const [sd, sh, sw] = p.strides, [dd, dh, dw] = p.dilation;
  return compute(groups === 1 ? 'conv3d_ndhwc' : 'group_conv3d_ndhwc', [n, od, oh, ow, co], ['nn', 'zz', 'yy', 'xx', 'ff'], (nn, zz, yy, xx, ff) => {
    const c = groups === 1 ? vr(rc) : add(mul(floordiv(ff, coPerGroup), kci), vr(rc));
    return sum(mul(load(padded, [nn, tap(zz, sd, vr(rz), dd), tap(yy, sh, vr(ry), dh), tap(xx, sw, vr(rx), dw), c]),
      load(kernel, [vr(rz), vr(ry), vr(rx), vr(rc), ff])), [rz, ry, rx, rc]);
  }, 'conv3d_ndhwc');
}
