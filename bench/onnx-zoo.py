"""Models exported the way users export them, run through tensortune and compared with ONNX
Runtime: does each import, compile, agree with ORT, and how fast is it.

Each model is built from a config or a plain torch module with random weights (nothing is
downloaded), exported with torch.onnx.export -- the legacy TorchScript exporter
(dynamo=False) at opset 9, 11, 13 or 17, or the dynamo exporter (dynamo=True) at opset 18 --
and saved with IR version 10 at most (onnxruntime-node 1.30 refuses IR versions above 13,
and newer exporters write 13+). Kept small: small hidden sizes and image sizes, each under
~100 MB and fast to compile. Then, per model:

  tsx engine/cli.ts tasks  M.onnx [--input-shapes S]
  tsx engine/cli.ts compile M.onnx --out M.tt [--input-shapes S]
  tsx engine/cli.ts benchmark M.tt --compare onnxruntime --threads 1 --rounds 1 --json

and writes OUT/M.json: machine, date, exporter, opset, the commands, and
imports / compiles / the max abs error of every output vs ORT / top-1 agreement / our and
ORT's median ms and their ratio, or the first error line of the step that failed.
OUT/summary.json collects them all and a table is printed at the end.

Needs python3 with torch (CPU is enough), transformers and onnxscript (dynamo exporter),
and onnx; the engine's node_modules (tsx, onnxruntime-node). Not part of npm test.

  python3 bench/onnx-zoo.py [--out /tmp/tt-zoo] [--only name,name] [--export-only]
                            [--skip-export] [--no-bench] [--list] [--record DIR]

--record DIR also writes the models that ran as one benchmark record there
(bench/result-record.ts; bench/results to publish it in docs/performance.md).

A model whose export fails (an exporter/torch version issue) is recorded as such.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TSX = os.path.join(REPO, 'node_modules', '.bin', 'tsx')
CLI = os.path.join(REPO, 'engine', 'cli.ts')


# ---------------------------------------------------------------------------------------------
# The models. Each entry: name -> (builder, exporter, opset). A builder returns
# (module, example_args, input_names, dynamic_axes or None, input_shapes for the CLI or None).

def _torch():
    import torch
    return torch


def hf_text(kind, run_shape=(1, 32)):
    torch = _torch()
    import transformers as tr
    seq = 32
    if kind == 'distilbert':
        m = tr.DistilBertModel(tr.DistilBertConfig(dim=256, n_layers=2, n_heads=4, hidden_dim=512))
    elif kind == 'roberta':
        m = tr.RobertaModel(tr.RobertaConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, attn_implementation='eager'), add_pooling_layer=False)
    elif kind == 'bert':
        m = tr.BertModel(tr.BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512), add_pooling_layer=False)
    elif kind == 'gpt2':
        m = tr.GPT2Model(tr.GPT2Config(n_embd=256, n_layer=2, n_head=4, n_positions=128, use_cache=False))
    elif kind == 't5':
        m = tr.T5EncoderModel(tr.T5Config(d_model=256, d_kv=64, d_ff=512, num_layers=2, num_heads=4, vocab_size=1000, attn_implementation='eager'))
    else:
        raise ValueError(kind)
    m.eval()

    class W(torch.nn.Module):
        def __init__(s, m):
            super().__init__()
            s.m = m

        def forward(s, ids, mask):
            if kind == 'gpt2':
                return s.m(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            return s.m(input_ids=ids, attention_mask=mask).last_hidden_state

    vocab = m.config.vocab_size
    ids = torch.randint(0, min(vocab, 1000), (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    dyn = {'input_ids': {0: 'batch', 1: 'seq'}, 'attention_mask': {0: 'batch', 1: 'seq'}}
    b, n = run_shape  # the exported dynamic axes run at this shape
    return W(m).eval(), (ids, mask), ['input_ids', 'attention_mask'], dyn, f'input_ids:[{b},{n}] attention_mask:[{b},{n}]'


def hf_vision(kind):
    torch = _torch()
    import transformers as tr
    size = 64
    if kind == 'vit':
        m = tr.ViTModel(tr.ViTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=size, patch_size=16), add_pooling_layer=False)
    elif kind == 'deit':
        m = tr.DeiTModel(tr.DeiTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=size, patch_size=16), add_pooling_layer=False)
    elif kind == 'clip':
        m = tr.CLIPVisionModel(tr.CLIPVisionConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=size, patch_size=16))
    else:
        raise ValueError(kind)
    m.eval()

    class W(torch.nn.Module):
        def __init__(s, m):
            super().__init__()
            s.m = m

        def forward(s, x):
            return s.m(pixel_values=x).last_hidden_state

    return W(m).eval(), (torch.randn(1, 3, size, size),), ['pixel_values'], None, None


def hf_more(kind):
    """More HF families users export: ConvNeXt, Swin (shifted windows: roll, masks), SegFormer,
    MobileViT, ResNet (vision); DeBERTa-v2 (relative positions), ALBERT, BART (encoder-decoder)."""
    torch = _torch()
    import transformers as tr
    size = 64
    img = lambda m: (m, (torch.randn(1, 3, size, size),), ['pixel_values'], None, None)
    if kind == 'convnext':
        m = tr.ConvNextModel(tr.ConvNextConfig(hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1]))
    elif kind == 'swin':
        m = tr.SwinModel(tr.SwinConfig(image_size=size, patch_size=4, embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=4))
    elif kind == 'segformer':
        m = tr.SegformerForSemanticSegmentation(tr.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[32, 64],
                                                                   num_attention_heads=[1, 2], decoder_hidden_size=64, num_labels=5,
                                                                   patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[4, 4]))
    elif kind == 'mobilevit':
        m = tr.MobileViTModel(tr.MobileViTConfig(image_size=size, hidden_sizes=[48, 64, 80], neck_hidden_sizes=[16, 16, 24, 32, 48, 64, 160]))
    elif kind == 'resnet':
        m = tr.ResNetModel(tr.ResNetConfig(embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1], layer_type='bottleneck'))
    if kind in ('convnext', 'swin', 'segformer', 'mobilevit', 'resnet'):
        m.eval()

        class V(torch.nn.Module):
            def __init__(s, m):
                super().__init__()
                s.m = m

            def forward(s, x):
                o = s.m(pixel_values=x)
                return o.logits if kind == 'segformer' else o.last_hidden_state
        return img(V(m).eval())
    seq = 16
    if kind == 'deberta':
        m = tr.DebertaV2Model(tr.DebertaV2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                                                 vocab_size=1000, relative_attention=True, position_buckets=32, max_relative_positions=64,
                                                 pos_att_type=['p2c', 'c2p']))
    elif kind == 'albert':
        m = tr.AlbertModel(tr.AlbertConfig(embedding_size=64, hidden_size=128, num_hidden_layers=3, num_attention_heads=4, intermediate_size=256,
                                           vocab_size=1000), add_pooling_layer=False)
    elif kind == 'bart':
        m = tr.BartModel(tr.BartConfig(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                                       encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=1000, use_cache=False))
    else:
        raise ValueError(kind)
    m.eval()

    class T(torch.nn.Module):
        def __init__(s, m):
            super().__init__()
            s.m = m

        def forward(s, ids, mask):
            if kind == 'bart':
                return s.m(input_ids=ids, attention_mask=mask, decoder_input_ids=ids, use_cache=False).last_hidden_state
            return s.m(input_ids=ids, attention_mask=mask).last_hidden_state
    ids = torch.randint(0, 1000, (1, seq))
    return T(m).eval(), (ids, torch.ones(1, seq, dtype=torch.int64)), ['input_ids', 'attention_mask'], None, None


def hf_audio(kind):
    torch = _torch()
    import transformers as tr
    if kind == 'whisper':
        cfg = tr.WhisperConfig(d_model=192, encoder_layers=2, encoder_attention_heads=3, encoder_ffn_dim=384,
                               decoder_layers=1, decoder_attention_heads=3, num_mel_bins=80, max_source_positions=100)
        m = tr.WhisperModel(cfg).get_encoder().eval()
        x = torch.randn(1, 80, 200)

        class W(torch.nn.Module):
            def __init__(s, m):
                super().__init__()
                s.m = m

            def forward(s, x):
                return s.m(input_features=x).last_hidden_state
        return W(m).eval(), (x,), ['input_features'], None, None
    if kind == 'wav2vec2':
        cfg = tr.Wav2Vec2Config(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384,
                                conv_dim=(64, 64, 64, 64, 64, 64, 64), num_conv_pos_embeddings=32, num_conv_pos_embedding_groups=4,
                                do_stable_layer_norm=False, feat_extract_norm='group')
        m = tr.Wav2Vec2Model(cfg).eval()

        class W(torch.nn.Module):
            def __init__(s, m):
                super().__init__()
                s.m = m

            def forward(s, x):
                return s.m(input_values=x).last_hidden_state
        return W(m).eval(), (torch.randn(1, 8000),), ['input_values'], None, None
    raise ValueError(kind)


def cnn(kind, variant=None):
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    def cbr(i, o, k=3, s=1, g=1, act=None):
        layers = [nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o)]
        if act is not None:
            layers.append(act())
        return nn.Sequential(*layers)

    class SE(nn.Module):
        def __init__(s, c, r=4, gate=nn.Hardsigmoid, act=nn.ReLU):
            super().__init__()
            s.f1 = nn.Conv2d(c, max(8, c // r), 1)
            s.f2 = nn.Conv2d(max(8, c // r), c, 1)
            s.act, s.gate = act(), gate()

        def forward(s, x):
            w = F.adaptive_avg_pool2d(x, 1)
            return x * s.gate(s.f2(s.act(s.f1(w))))

    class IR(nn.Module):  # inverted residual (MobileNetV3 / EfficientNet MBConv)
        def __init__(s, i, e, o, k, st, se, act, gate):
            super().__init__()
            s.res = st == 1 and i == o
            s.exp = cbr(i, e, 1, act=act) if e != i else nn.Identity()
            s.dw = cbr(e, e, k, st, g=e, act=act)
            s.se = SE(e, gate=gate, act=act if act is nn.SiLU else nn.ReLU) if se else nn.Identity()
            s.pw = cbr(e, o, 1)

        def forward(s, x):
            y = s.pw(s.se(s.dw(s.exp(x))))
            return x + y if s.res else y

    if kind == 'mobilenetv3':
        HS, RE = nn.Hardswish, nn.ReLU
        cfg = [(16, 16, 16, 3, 2, True, RE), (16, 72, 24, 3, 2, False, RE), (24, 88, 24, 3, 1, False, RE),
               (24, 96, 40, 5, 2, True, HS), (40, 240, 40, 5, 1, True, HS), (40, 120, 48, 5, 1, True, HS),
               (48, 288, 96, 5, 2, True, HS), (96, 576, 96, 5, 1, True, HS)]
        m = nn.Sequential(cbr(3, 16, 3, 2, act=HS), *[IR(i, e, o, k, s, se, a, nn.Hardsigmoid) for i, e, o, k, s, se, a in cfg],
                          cbr(96, 576, 1, act=HS), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(576, 1024), nn.Hardswish(),
                          nn.Dropout(0.2), nn.Linear(1024, 1000))
        return m, (torch.randn(1, 3, 224, 224),), ['input'], None, None
    if kind == 'efficientnet':
        S = nn.SiLU
        cfg = [(32, 32, 16, 3, 1), (16, 96, 24, 3, 2), (24, 144, 24, 3, 1), (24, 144, 40, 5, 2), (40, 240, 40, 5, 1),
               (40, 240, 80, 3, 2), (80, 480, 112, 5, 1), (112, 672, 192, 5, 2), (192, 1152, 320, 3, 1)]
        m = nn.Sequential(cbr(3, 32, 3, 2, act=S), *[IR(i, e, o, k, s, True, S, nn.Sigmoid) for i, e, o, k, s in cfg],
                          cbr(320, 1280, 1, act=S), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, 1000))
        return m, (torch.randn(1, 3, 160, 160),), ['input'], None, None
    if kind == 'unet':
        class UNet(nn.Module):
            def __init__(s, c=16):
                super().__init__()
                blk = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU(), nn.Conv2d(o, o, 3, 1, 1), nn.ReLU())
                s.d1, s.d2, s.d3 = blk(3, c), blk(c, 2 * c), blk(2 * c, 4 * c)
                s.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
                s.u2 = blk(4 * c, 2 * c)
                s.u1 = blk(3 * c, c)
                s.out = nn.Conv2d(c, 2, 1)

            def forward(s, x):
                a = s.d1(x)
                b = s.d2(F.max_pool2d(a, 2))
                c = s.d3(F.max_pool2d(b, 2))
                u = s.u2(torch.cat([s.up2(c), b], 1))
                if variant == 'aligned':  # what many UNet ports use
                    u = F.interpolate(u, scale_factor=2, mode='bilinear', align_corners=True)
                elif variant == 'bicubic':
                    u = F.interpolate(u, scale_factor=2, mode='bicubic', align_corners=False)
                else:
                    u = F.interpolate(u, scale_factor=2, mode='bilinear', align_corners=False)
                return s.out(s.u1(torch.cat([u, a], 1)))
        return UNet().eval(), (torch.randn(1, 3, 64, 64),), ['input'], None, None
    if kind == 'yolo':
        class Yolo(nn.Module):
            def __init__(s, nc=8, na=3):
                super().__init__()
                S = nn.SiLU
                s.nc, s.na = nc, na
                s.b1 = nn.Sequential(cbr(3, 16, 3, 2, act=S), cbr(16, 32, 3, 2, act=S), cbr(32, 32, 3, 1, act=S))  # /4
                s.b2 = nn.Sequential(cbr(32, 64, 3, 2, act=S), cbr(64, 64, 3, 1, act=S))  # /8
                s.b3 = nn.Sequential(cbr(64, 128, 3, 2, act=S), cbr(128, 128, 1, act=S))  # /16
                s.lat = cbr(128, 64, 1, act=S)
                s.fuse = cbr(128, 64, 3, act=S)
                s.h1 = nn.Conv2d(64, na * (5 + nc), 1)
                s.h2 = nn.Conv2d(128, na * (5 + nc), 1)

            def head(s, p):
                b, _, h, w = p.shape
                p = p.view(b, s.na, 5 + s.nc, h, w).permute(0, 1, 3, 4, 2).reshape(b, -1, 5 + s.nc)
                xy, wh, conf = p.split([2, 2, 1 + s.nc], dim=-1)
                return torch.cat([xy.sigmoid() * 2 - 0.5, (wh.sigmoid() * 2) ** 2, conf.sigmoid()], -1)

            def forward(s, x):
                c2 = s.b2(s.b1(x))
                c3 = s.b3(c2)
                up = F.interpolate(s.lat(c3), scale_factor=2, mode='nearest')
                p2 = s.fuse(torch.cat([up, c2], 1))
                return torch.cat([s.head(s.h1(p2)), s.head(s.h2(c3))], 1)
        return Yolo().eval(), (torch.randn(1, 3, 128, 128),), ['images'], None, None
    if kind == 'crnn':
        class CRNN(nn.Module):
            def __init__(s, classes=37):
                super().__init__()
                s.cnn = nn.Sequential(cbr(1, 32, act=nn.ReLU), nn.MaxPool2d(2, 2), cbr(32, 64, act=nn.ReLU), nn.MaxPool2d(2, 2),
                                      cbr(64, 128, act=nn.ReLU), nn.MaxPool2d((2, 1), (2, 1)), cbr(128, 128, act=nn.ReLU),
                                      nn.MaxPool2d((4, 1), (4, 1)))
                s.rnn = nn.LSTM(128, 64, num_layers=2, bidirectional=True)
                s.fc = nn.Linear(128, classes)

            def forward(s, x):
                f = s.cnn(x).squeeze(2).permute(2, 0, 1)  # T, B, C
                y, _ = s.rnn(f)
                return F.log_softmax(s.fc(y), dim=2)
        return CRNN().eval(), (torch.randn(1, 1, 32, 100),), ['image'], None, None
    if kind == 'dbnet':
        class DB(nn.Module):
            def __init__(s, c=32):
                super().__init__()
                s.s1 = nn.Sequential(cbr(3, 16, 3, 2, act=nn.ReLU), cbr(16, 24, 3, 2, act=nn.ReLU))  # /4
                s.s2 = cbr(24, 40, 3, 2, act=nn.ReLU)  # /8
                s.s3 = cbr(40, 64, 3, 2, act=nn.ReLU)  # /16
                s.l1, s.l2, s.l3 = nn.Conv2d(24, c, 1), nn.Conv2d(40, c, 1), nn.Conv2d(64, c, 1)
                s.o1, s.o2, s.o3 = (nn.Conv2d(c, c // 4, 3, 1, 1) for _ in range(3))
                s.binarize = nn.Sequential(nn.Conv2d(3 * (c // 4), c // 4, 3, 1, 1), nn.BatchNorm2d(c // 4), nn.ReLU(),
                                           nn.ConvTranspose2d(c // 4, c // 4, 2, 2), nn.BatchNorm2d(c // 4), nn.ReLU(),
                                           nn.ConvTranspose2d(c // 4, 1, 2, 2), nn.Sigmoid())

            def forward(s, x):
                a = s.s1(x)
                b = s.s2(a)
                c = s.s3(b)
                p3 = s.l3(c)
                p2 = s.l2(b) + F.interpolate(p3, scale_factor=2, mode='nearest')
                p1 = s.l1(a) + F.interpolate(p2, scale_factor=2, mode='nearest')
                f = torch.cat([F.interpolate(s.o3(p3), scale_factor=4, mode='nearest'),
                               F.interpolate(s.o2(p2), scale_factor=2, mode='nearest'), s.o1(p1)], 1)
                return s.binarize(f)
        return DB().eval(), (torch.randn(1, 3, 128, 128),), ['image'], None, None
    if kind == 'kws':
        class KWS(nn.Module):
            def __init__(s):
                super().__init__()
                blk = lambda i, o, k, st: nn.Sequential(nn.Conv1d(i, o, k, st, k // 2, bias=False), nn.BatchNorm1d(o), nn.ReLU())
                s.f = nn.Sequential(blk(40, 64, 5, 1), nn.MaxPool1d(2), blk(64, 96, 3, 1), blk(96, 96, 3, 2), nn.AvgPool1d(2),
                                    blk(96, 128, 3, 1), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 12))

            def forward(s, x):
                return s.f(x)
        return KWS().eval(), (torch.randn(1, 40, 98),), ['mfcc'], None, None
    if kind == 'video3d':
        m = nn.Sequential(nn.Conv3d(3, 32, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False), nn.BatchNorm3d(32), nn.ReLU(),
                          nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)),
                          nn.Conv3d(32, 32, 3, 1, 1, bias=False), nn.BatchNorm3d(32), nn.ReLU(),
                          nn.Conv3d(32, 64, 3, 2, 1, bias=False), nn.BatchNorm3d(64), nn.ReLU(),
                          nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(64, 10))
        return m, (torch.randn(1, 3, 8, 64, 64),), ['clip'], None, None
    if kind == 'dcgan':
        z = 64
        m = nn.Sequential(nn.ConvTranspose2d(z, 256, 4, 1, 0, bias=False), nn.BatchNorm2d(256), nn.ReLU(),
                          nn.ConvTranspose2d(256, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
                          nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), nn.Tanh())
        return m, (torch.randn(1, z, 1, 1),), ['z'], None, None
    if kind == 'espcn':
        m = nn.Sequential(nn.Conv2d(1, 32, 5, 1, 2), nn.Tanh(), nn.Conv2d(32, 16, 3, 1, 1), nn.Tanh(),
                          nn.Conv2d(16, 9, 3, 1, 1), nn.PixelShuffle(3))
        return m, (torch.randn(1, 1, 64, 64),), ['lr'], None, None
    if kind == 'style':
        class Style(nn.Module):
            def __init__(s):
                super().__init__()
                s.e = nn.Sequential(nn.Conv2d(3, 16, 9, 1, 4), nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
                                    nn.Conv2d(16, 32, 3, 2, 1), nn.InstanceNorm2d(32, affine=True), nn.ReLU(),
                                    nn.Conv2d(32, 64, 3, 2, 1), nn.GroupNorm(8, 64), nn.ReLU())
                s.r = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(64, 64, 3), nn.InstanceNorm2d(64, affine=True), nn.ReLU(),
                                    nn.ReflectionPad2d(1), nn.Conv2d(64, 64, 3), nn.InstanceNorm2d(64, affine=True))
                s.d = nn.Sequential(nn.Upsample(scale_factor=2, mode='nearest'), nn.Conv2d(64, 32, 3, 1, 1), nn.GroupNorm(4, 32), nn.ReLU(),
                                    nn.ConvTranspose2d(32, 16, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
                                    nn.Conv2d(16, 3, 9, 1, 4))

            def forward(s, x):
                y = s.e(x)
                return s.d(y + s.r(y))
        return Style().eval(), (torch.randn(1, 3, 64, 64),), ['content'], None, None
    raise ValueError(kind)


def probes(kind):
    """Patterns from real exports where semantics changed between opsets or are easy to get
    subtly wrong: Softmax on a non-last axis before opset 13 (then it flattened to 2-D),
    ceil_mode / count_include_pad pools, dilated convs, Resize to a size with
    align_corners, Clip with attributes (opset 9 ReLU6), dynamic batch, GRU, misc ops."""
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional
    if kind == 'deeplab':
        class Seg(nn.Module):
            def __init__(s):
                super().__init__()
                s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU())
                s.pool = nn.MaxPool2d(3, 2, 0, ceil_mode=True)
                s.avg = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
                s.a1 = nn.Conv2d(32, 16, 1)
                s.a2 = nn.Conv2d(32, 16, 3, 1, 2, dilation=2)
                s.a3 = nn.Conv2d(32, 16, 3, 1, 4, dilation=4)
                s.gp = nn.Conv2d(32, 16, 1)
                s.proj = nn.Conv2d(64, 5, 1)

            def forward(s, x):
                h, w = x.shape[2:]
                f = s.avg(s.pool(s.stem(x)))
                g = F.interpolate(s.gp(F.adaptive_avg_pool2d(f, 1)), size=f.shape[2:], mode='bilinear', align_corners=True)
                y = s.proj(torch.cat([s.a1(f), s.a2(f), s.a3(f), g], 1))
                y = F.interpolate(y, size=(h, w), mode='bilinear', align_corners=True)
                return F.softmax(y, dim=1)
        return Seg().eval(), (torch.randn(1, 3, 97, 75),), ['image'], None, None
    if kind == 'mobilenetv2':
        def ir(i, o, st, e=4):
            return nn.Sequential(nn.Conv2d(i, i * e, 1, bias=False), nn.BatchNorm2d(i * e), nn.ReLU6(),
                                 nn.Conv2d(i * e, i * e, 3, st, 1, groups=i * e, bias=False), nn.BatchNorm2d(i * e), nn.ReLU6(),
                                 nn.Conv2d(i * e, o, 1, bias=False), nn.BatchNorm2d(o))
        m = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU6(), ir(16, 24, 2), ir(24, 32, 2), ir(32, 64, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 100), nn.LogSoftmax(dim=1))
        return m, (torch.randn(2, 3, 96, 96),), ['input'], {'input': {0: 'batch'}}, 'input:[2,3,96,96]'
    if kind == 'gru':
        class Tagger(nn.Module):
            def __init__(s):
                super().__init__()
                s.emb = nn.Embedding(100, 32)
                s.gru = nn.GRU(32, 48, num_layers=1, batch_first=True, bidirectional=True)
                s.fc = nn.Linear(96, 9)

            def forward(s, ids):
                y, h = s.gru(s.emb(ids))
                return F.log_softmax(s.fc(y), dim=-1), h
        return Tagger().eval(), (torch.randint(0, 100, (2, 20)),), ['ids'], None, None
    if kind in ('misc', 'einsum'):
        class Misc(nn.Module):
            def __init__(s):
                super().__init__()
                s.c = nn.Conv2d(8, 8, 3, 1, 1)
                s.prelu = nn.PReLU(8)
                s.ln = nn.LayerNorm(8)
                s.w = nn.Parameter(torch.randn(8, 6))
                s.einsum = kind == 'einsum'

            def forward(s, x):
                y = s.prelu(s.c(x))
                y = F.leaky_relu(y, 0.1) + F.mish(y) + F.gelu(y, approximate='tanh') + F.elu(y) + F.softplus(y)
                y = torch.flip(y, [3])
                t = y.flatten(2).transpose(1, 2)  # B, HW, C
                t = s.ln(t)
                z = torch.einsum('bnc,cd->bnd', t, s.w) if s.einsum else t @ s.w
                z = torch.cumsum(z, dim=1) / 10 + z[:, -1:, :]
                v, _ = torch.topk(z, 3, dim=-1)
                soft = F.softmax(y, dim=1)  # over channels of NCHW
                m = y.amax(dim=(2, 3)) + y.mean(dim=1).flatten(1).sum(-1, keepdim=True)
                return v, soft, m.expand(2, -1, -1), torch.clamp(y, -0.5, 0.5)
        return Misc().eval(), (torch.randn(1, 8, 12, 10),), ['x'], None, None
    if kind == 'edges':
        class Edges(nn.Module):
            """One output per pattern, so that a mismatch names its pattern."""
            def __init__(s):
                super().__init__()
                s.c = nn.Conv2d(4, 8, 3, 1, 1)
                s.grp = nn.Conv2d(8, 8, 3, 1, 1, groups=2)
                s.same = nn.Conv2d(8, 4, 4, 1, padding='same')
                s.dct = nn.ConvTranspose2d(8, 4, 3, 2, 1, output_padding=1, dilation=1, groups=2)
                s.dct2 = nn.ConvTranspose2d(8, 4, 4, 2, 2, dilation=2)
                s.in1d = nn.InstanceNorm1d(8, affine=True)
                s.ln3 = nn.LayerNorm([8, 11, 9])

            def forward(s, x):
                y = s.c(x)  # 1, 8, 11, 9
                outs = [
                    F.interpolate(y, size=(5, 7), mode='nearest'),
                    F.interpolate(y, size=(17, 20), mode='nearest'),
                    F.interpolate(y, scale_factor=0.6, mode='bilinear', align_corners=False),
                    F.interpolate(y, size=(7, 4), mode='bilinear', align_corners=True),
                    F.avg_pool2d(y, 3, 2, 1, ceil_mode=True),
                    F.avg_pool2d(y, 2, 2, 0, ceil_mode=True, count_include_pad=False),
                    F.max_pool2d(y, 3, 2, 1, dilation=2),
                    F.max_pool2d(y, 2, 2, 0, ceil_mode=True),
                    s.grp(y), s.same(y), s.dct(y), s.dct2(y),
                    F.normalize(y.flatten(1), dim=1),
                    s.in1d(y.flatten(2)),
                    s.ln3(y),
                    F.pixel_unshuffle(y[:, :, :10, :8], 2),
                    y.view(1, 2, 4, 11, 9).transpose(1, 2).reshape(1, 8, 11, 9),  # channel shuffle
                    F.hardtanh(y, -0.3, 0.4), F.relu6(y * 4),
                    torch.where(y > 0, y, y.mean(dim=(1,), keepdim=True)),
                    y[:, torch.tensor([3, -1, 0])], y[..., 1:-1:3], y[:, :, -4:],
                    F.interpolate(y.unsqueeze(2).repeat(1, 1, 2, 1, 1), scale_factor=(2, 2, 2), mode='trilinear', align_corners=False),
                    torch.remainder(y * 3, 1.5), torch.floor_divide(y * 7, 2),
                    y.std(dim=-1), torch.logsumexp(y, dim=1), y.norm(dim=2), y.prod(dim=3).clamp(-1e3, 1e3),
                    y.argmax(dim=1).float(), y.max(dim=2).values,
                    torch.atan2(y, y.flip(1)) if hasattr(torch, 'atan2') else y,
                ]
                return tuple(outs)
        return Edges().eval(), (torch.randn(1, 4, 11, 9),), ['x'], None, None
    raise ValueError(kind)


def vad():
    """Silero-VAD-like: an int64 scalar sample rate picks the front end through an `If`."""
    torch = _torch()
    nn = torch.nn

    class VAD(nn.Module):
        def __init__(s):
            super().__init__()
            s.stft16 = nn.Conv1d(1, 64, 64, 32, bias=False)
            s.stft8 = nn.Conv1d(1, 64, 32, 16, bias=False)
            s.enc = nn.Sequential(nn.Conv1d(64, 64, 3, 1, 1), nn.ReLU(), nn.Conv1d(64, 64, 3, 1, 1), nn.ReLU())
            s.lstm = nn.LSTM(64, 64, batch_first=True)
            s.out = nn.Linear(64, 1)

        def forward(s, x, sr):
            def f16(x):
                return s.stft16(x.unsqueeze(1))

            def f8(x):
                return s.stft8(x[:, ::2].unsqueeze(1))
            f = torch.cond(sr == 16000, f16, f8, (x,))
            y, _ = s.lstm(s.enc(f).transpose(1, 2))
            return torch.sigmoid(s.out(y[:, -1]))
    return VAD().eval(), (torch.randn(1, 512), torch.tensor(16000, dtype=torch.int64)), ['input', 'sr'], None, None


MODELS = {
    # name: (builder, exporter, opset)
    # HF attention is scaled_dot_product_attention, which the legacy exporter maps from opset 14;
    # below that users pick attn_implementation='eager' (roberta, t5 here)
    'distilbert': (lambda: hf_text('distilbert'), 'legacy', 14),
    'roberta': (lambda: hf_text('roberta'), 'legacy', 11),
    'distilbert-batch3-seq7': (lambda: hf_text('distilbert', (3, 7)), 'legacy', 14),
    'gpt2-batch2-seq9': (lambda: hf_text('gpt2', (2, 9)), 'legacy', 14),
    't5-encoder-batch2-seq5': (lambda: hf_text('t5', (2, 5)), 'legacy', 13),
    'bert-dynamo': (lambda: hf_text('bert'), 'dynamo', 18),
    'gpt2': (lambda: hf_text('gpt2'), 'legacy', 14),
    't5-encoder': (lambda: hf_text('t5'), 'legacy', 13),
    'vit-dynamo': (lambda: hf_vision('vit'), 'dynamo', 18),
    'deit': (lambda: hf_vision('deit'), 'legacy', 17),
    'clip-vision': (lambda: hf_vision('clip'), 'dynamo', 18),
    'clip-vision-legacy': (lambda: hf_vision('clip'), 'legacy', 14),
    'whisper-encoder': (lambda: hf_audio('whisper'), 'legacy', 17),
    'convnext': (lambda: hf_more('convnext'), 'legacy', 17),
    'swin': (lambda: hf_more('swin'), 'legacy', 17),
    'swin-dynamo': (lambda: hf_more('swin'), 'dynamo', 18),
    'segformer': (lambda: hf_more('segformer'), 'legacy', 17),
    'mobilevit': (lambda: hf_more('mobilevit'), 'legacy', 17),
    'resnet-hf': (lambda: hf_more('resnet'), 'legacy', 13),
    'deberta-v2': (lambda: hf_more('deberta'), 'legacy', 17),
    'albert': (lambda: hf_more('albert'), 'legacy', 14),
    'bart': (lambda: hf_more('bart'), 'legacy', 14),
    'bart-dynamo': (lambda: hf_more('bart'), 'dynamo', 18),
    'wav2vec2': (lambda: hf_audio('wav2vec2'), 'legacy', 14),
    'mobilenetv3-small': (lambda: cnn('mobilenetv3'), 'legacy', 17),
    'mobilenetv3-small-op11': (lambda: cnn('mobilenetv3'), 'legacy', 11),
    'efficientnet-b0': (lambda: cnn('efficientnet'), 'legacy', 13),
    'efficientnet-b0-dynamo': (lambda: cnn('efficientnet'), 'dynamo', 18),
    'unet': (lambda: cnn('unet'), 'legacy', 11),
    'unet-op9': (lambda: cnn('unet'), 'legacy', 9),
    'unet-aligned-corners': (lambda: cnn('unet', 'aligned'), 'legacy', 11),
    'unet-bicubic-dynamo': (lambda: cnn('unet', 'bicubic'), 'dynamo', 18),
    'yolo-head': (lambda: cnn('yolo'), 'legacy', 13),
    'yolo-head-op11': (lambda: cnn('yolo'), 'legacy', 11),
    'crnn': (lambda: cnn('crnn'), 'legacy', 11),
    'dbnet': (lambda: cnn('dbnet'), 'legacy', 11),
    'vad-lstm': (vad, 'dynamo', 18),
    'deeplab-op11': (lambda: probes('deeplab'), 'legacy', 11),
    'mobilenetv2-op9-batch2': (lambda: probes('mobilenetv2'), 'legacy', 9),
    'gru-tagger-op11': (lambda: probes('gru'), 'legacy', 11),
    'misc-ops-op11': (lambda: probes('misc'), 'legacy', 11),
    'einsum-op12': (lambda: probes('einsum'), 'legacy', 12),
    'edges-op11': (lambda: probes('edges'), 'legacy', 11),
    'edges-op13': (lambda: probes('edges'), 'legacy', 13),
    'edges-op17': (lambda: probes('edges'), 'legacy', 17),
    'edges-dynamo': (lambda: probes('edges'), 'dynamo', 18),
    'misc-ops-op17': (lambda: probes('misc'), 'legacy', 17),
    'misc-ops-dynamo': (lambda: probes('misc'), 'dynamo', 18),
    'kws-conv1d': (lambda: cnn('kws'), 'legacy', 9),
    'video3d': (lambda: cnn('video3d'), 'legacy', 13),
    'dcgan': (lambda: cnn('dcgan'), 'legacy', 9),
    'espcn-pixelshuffle': (lambda: cnn('espcn'), 'legacy', 11),
    'style-transfer': (lambda: cnn('style'), 'legacy', 17),
    'style-transfer-dynamo': (lambda: cnn('style'), 'dynamo', 18),
}


def lively(m):
    """Weights that keep activations alive through a deep random CNN, so that a comparison with
    ORT compares something: He-normal convs/linears (PyTorch's default init shrinks the signal
    ~3x a layer, and a 20-layer net then outputs its last bias), random batch-norm statistics
    and affine parameters."""
    torch = _torch()
    nn = torch.nn
    for mod in m.modules():
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)):
            nn.init.kaiming_normal_(mod.weight, nonlinearity='relu')
        elif isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            fan = mod.weight.shape[0] * mod.weight[0, 0].numel() / max(1, mod.stride[0] * mod.stride[-1])
            nn.init.normal_(mod.weight, 0.0, (2.0 / fan) ** 0.5)
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.ConvTranspose2d)) and mod.bias is not None:
            nn.init.normal_(mod.bias, 0.0, 0.1)
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            mod.running_mean.normal_(0.0, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.GroupNorm, nn.InstanceNorm2d)) and mod.affine:
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.normal_(0.0, 0.1)
    return m


def export(name, path):
    torch = _torch()
    import onnx
    from transformers import PreTrainedModel
    torch.manual_seed(0)
    builder, exporter, opset = MODELS[name]
    m, args, names, dyn, shapes = builder()
    # HF CNNs (MobileViT, ResNet, SegFormer's head) init convs at std 0.02 too: the output of
    # MobileViT was ~1e-43 (denormals), comparing nothing
    if not any(isinstance(x, PreTrainedModel) for x in m.modules()) or any(isinstance(x, torch.nn.BatchNorm2d) for x in m.modules()):
        lively(m)
    m.eval()
    with torch.no_grad():
        if exporter == 'dynamo':
            prog = torch.onnx.export(m, args, None, input_names=names, opset_version=opset, dynamo=True)
            prog.save(path)
        else:
            torch.onnx.export(m, args, path, input_names=names, opset_version=opset, dynamo=False, dynamic_axes=dyn)
    mp = onnx.load(path)
    if mp.ir_version > 10:
        mp.ir_version = 10
    onnx.save(mp, path)  # one file: the dynamo exporter's external data, if any, is folded in
    with open(path + '.shapes', 'w') as f:  # --input-shapes for --skip-export
        f.write(shapes or '')
    for extra in (path + '.data',):
        if os.path.exists(extra):
            os.remove(extra)
    return shapes, mp


def first_error(text):
    lines = [l for l in text.strip().split('\n') if l.strip()]
    for l in lines:
        if re.search(r'error|unsupported|not supported|Error', l):
            return l.strip()[:400]
    return (lines[-1].strip() if lines else '')[:400]


def cli(args, timeout):
    t0 = time.time()
    try:
        r = subprocess.run([TSX, CLI, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or '', f'timed out after {timeout} s', time.time() - t0


def run_one(name, out, do_export, do_bench):
    _, exporter, opset = MODELS[name]
    path = os.path.join(out, f'{name}.onnx')
    res = {'model': name, 'exporter': exporter, 'opset': opset, 'machine': platform.node(),
           'cpu': platform.processor() or platform.machine(),
           'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), 'commands': []}
    shapes = None
    if do_export:
        try:
            shapes, mp = export(name, path)
            res['onnx_mb'] = round(os.path.getsize(path) / 1e6, 2)
            res['nodes'] = len(mp.graph.node)
            res['ops'] = sorted({n.op_type for n in mp.graph.node})
        except Exception as e:  # noqa: BLE001 -- recorded, the zoo goes on
            res['exported'] = False
            res['error'] = f'export: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}'[:400]
            traceback.print_exc()
            return res
    elif os.path.exists(path + '.shapes'):
        with open(path + '.shapes') as f:
            shapes = f.read().strip() or None
    res['exported'] = os.path.exists(path)
    if not res['exported']:
        res['error'] = 'no ONNX file'
        return res
    shape_args = ['--input-shapes', shapes] if shapes else []
    if shapes:
        res['input_shapes'] = shapes
    cmd = ['tasks', path, *shape_args]
    res['commands'].append(' '.join(['tsx engine/cli.ts', *cmd]))
    rc, so, se, _ = cli(cmd, 300)
    res['imports'] = rc == 0
    if rc != 0:
        res['error'] = 'tasks: ' + first_error(se + so)
        res['import_errors'] = [l.strip() for l in (se + so).split('\n') if l.strip().startswith('- ')][:50]
        return res
    res['tasks'] = sum(1 for l in so.split('\n') if re.match(r'\s*\d+\s', l)) or None
    tt = os.path.join(out, f'{name}.tt')
    cmd = ['compile', path, '--out', tt, *shape_args]
    res['commands'].append(' '.join(['tsx engine/cli.ts', *cmd]))
    rc, so, se, secs = cli(cmd, 1200)
    res['compiles'] = rc == 0
    res['compile_s'] = round(secs, 1)
    if rc != 0:
        res['error'] = 'compile: ' + first_error(se + so)
        return res
    if not do_bench:
        return res
    cmd = ['benchmark', tt, '--compare', 'onnxruntime', '--threads', '1', '--rounds', '1', '--json']
    res['commands'].append(' '.join(['tsx engine/cli.ts', *cmd]))
    rc, so, se, _ = cli(cmd, 600)
    res['runs'] = rc == 0
    if rc != 0:
        res['error'] = 'benchmark: ' + first_error(se + so)
        return res
    try:
        rep = json.loads(so.strip().split('\n')[-1])
    except json.JSONDecodeError:
        res['error'] = 'benchmark: no JSON report'
        return res
    outs = rep.get('outputs', [])
    res['outputs'] = outs
    res['max_abs_err'] = max((o['max_abs_err'] for o in outs), default=None)
    # rtol/atol 1e-4 against ORT, per output
    res['agrees'] = all(o['max_abs_err'] <= 1e-4 + 1e-4 * o['max_abs_value'] for o in outs)
    res['top1_agree'] = rep.get('top1', {}).get('agree')
    res['ours_ms'] = rep.get('tensortune_median_ms')
    res['ort_ms'] = rep.get('onnxruntime_median_ms')
    res['ratio'] = rep.get('ratio')
    res['threads'] = rep.get('threads', 1)
    return res


def fmt(v, p=3):
    if v is None:
        return '-'
    if isinstance(v, bool):
        return 'yes' if v else 'no'
    if isinstance(v, float):
        return f'{v:.{p}g}'
    return str(v)


def write_record(folder, results, out):
    """One vs-reference record of the models that ran (bench/result-record.ts checks and names it)."""
    rows = []
    for r in results:
        if not r.get('ratio'):
            continue
        row = {'network': f'{r["model"]} ({r["exporter"]}, opset {r["opset"]})', 'schedules': 'default',
               'threads': r.get('threads', 1), 'oursMs': round(r['ours_ms'], 3), 'referenceMs': round(r['ort_ms'], 3),
               'ratio': round(r['ratio'], 3), 'maxAbsErr': float(f'{r["max_abs_err"]:.2e}')}
        if r.get('top1_agree') is not None:
            row['top1'] = bool(r['top1_agree'])
        rows.append(row)
    if not rows:
        print('no model ran: no record written')
        return
    failed = [r['model'] for r in results if not r.get('ratio')]
    try:
        import onnxruntime
        ort = {'name': 'ONNX Runtime', 'version': onnxruntime.__version__}
    except ImportError:
        ort = {'name': 'ONNX Runtime'}
    rec = {'format': 1, 'kind': 'vs-reference', 'source': 'measured',
           'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%MZ'),
           'command': ' '.join(['python3', 'bench/onnx-zoo.py', *sys.argv[1:]]), 'target': 'llvm -mcpu=native',
           'reference': ort, 'results': rows,
           'notes': f'{len(rows)} of {len(results)} models compared, 1 round, 1 thread' + (f'; not compared: {", ".join(failed)}' if failed else '')}
    tmp = os.path.join(out, 'record.partial.json')
    with open(tmp, 'w') as f:
        json.dump(rec, f)
    try:
        subprocess.run([TSX, os.path.join(REPO, 'bench', 'result-record.ts'), 'write', tmp, folder], check=True)
    finally:
        os.remove(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default='/tmp/tt-zoo')
    ap.add_argument('--only', default='')
    ap.add_argument('--export-only', action='store_true')
    ap.add_argument('--skip-export', action='store_true', help='reuse OUT/M.onnx')
    ap.add_argument('--no-bench', action='store_true', help='stop after compile')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--record', default='', help='write a benchmark record into this folder')
    a = ap.parse_args()
    if a.list:
        for k, (_, e, o) in MODELS.items():
            print(f'{k:28s} {e} opset {o}')
        return
    os.makedirs(a.out, exist_ok=True)
    names = [n for n in a.only.split(',') if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f'unknown model {n!r}; --list names them')
    results = []
    for n in names:
        print(f'== {n}', flush=True)
        if a.export_only:
            try:
                _, mp = export(n, os.path.join(a.out, f'{n}.onnx'))
                print(f'   {len(mp.graph.node)} nodes, ir {mp.ir_version}, ops: {" ".join(sorted({x.op_type for x in mp.graph.node}))}')
            except Exception as e:  # noqa: BLE001
                print(f'   export failed: {type(e).__name__}: {e}'[:300])
            continue
        r = run_one(n, a.out, not a.skip_export, not a.no_bench)
        with open(os.path.join(a.out, f'{n}.json'), 'w') as f:
            json.dump(r, f, indent=1)
        results.append(r)
        print(f'   {json.dumps({k: r.get(k) for k in ("imports", "compiles", "max_abs_err", "agrees", "ours_ms", "ort_ms", "error")})}', flush=True)
    if a.export_only:
        return
    prev = {}
    sp = os.path.join(a.out, 'summary.json')
    if os.path.exists(sp):
        with open(sp) as f:
            prev = {r['model']: r for r in json.load(f)}
    for r in results:
        prev[r['model']] = r
    with open(sp, 'w') as f:
        json.dump(list(prev.values()), f, indent=1)
    if a.record:
        write_record(a.record, results, a.out)
    print(f'\n{"model":28s} {"exporter/opset":14s} {"imports":7s} {"compiles":8s} {"max abs err":11s} {"agree":5s} {"ours ms":8s} {"ORT ms":8s} error')
    for r in results:
        print(f'{r["model"]:28s} {r["exporter"] + "/" + str(r["opset"]):14s} {fmt(r.get("imports")):7s} {fmt(r.get("compiles")):8s} '
              f'{fmt(r.get("max_abs_err")):11s} {fmt(r.get("agrees")):5s} {fmt(r.get("ours_ms")):8s} {fmt(r.get("ort_ms")):8s} {r.get("error", "")}')


if __name__ == '__main__':
    main()
