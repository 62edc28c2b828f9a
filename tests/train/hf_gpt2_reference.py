#!/usr/bin/env python3
"""Independent float64 reference for exported GPT-2 folders, written from Hugging Face's GPT-2
semantics (modeling_gpt2: Conv1D computes x @ W + b with W stored [in, out]; c_attn's output is q, k, v
in that order, heads are consecutive slices of hd columns; gelu_new; pre-LayerNorm blocks; ln_f; LM
head tied to wte). Reads DIR/model.safetensors (F32) and DIR/config.json, and a token shard (llm.c
layout: 256 int32 header, then uint16 tokens); prints the mean next-token loss (nats) of tokens
[0, n] as one causal sequence: the n predictions of inputs 0..n-1.
    hf_gpt2_reference.py DIR SHARD N
"""
import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return tensors


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def forward(p, cfg, tokens):
    T, C, nh = len(tokens), cfg["n_embd"], cfg["n_head"]
    hd, eps = C // nh, cfg.get("layer_norm_epsilon", 1e-5)
    h = p["wte.weight"][tokens] + p["wpe.weight"][:T]
    causal = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["n_layer"]):
        w = lambda name: p[f"h.{l}.{name}"]
        a = layer_norm(h, w("ln_1.weight"), w("ln_1.bias"), eps)
        qkv = a @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(T, nh, hd).transpose(1, 0, 2) for i in range(3))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + causal
        s = np.exp(s - s.max(-1, keepdims=True))
        y = (s / s.sum(-1, keepdims=True)) @ v
        y = y.transpose(1, 0, 2).reshape(T, C)
        h = h + y @ w("attn.c_proj.weight") + w("attn.c_proj.bias")
        m = layer_norm(h, w("ln_2.weight"), w("ln_2.bias"), eps)
        m = gelu_new(m @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"))
        h = h + m @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias")
    h = layer_norm(h, p["ln_f.weight"], p["ln_f.bias"], eps)
    return h @ p["wte.weight"].T


def main():
    folder, shard, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cfg = json.load(open(f"{folder}/config.json"))
    params = read_safetensors(f"{folder}/model.safetensors")
    raw = open(shard, "rb").read()
    tokens = np.frombuffer(raw[1024:], dtype="<u2").astype(np.int64)[: n + 1]
    logits = forward(params, cfg, tokens[:n])
    top = logits.max(-1, keepdims=True)
    logz = (top + np.log(np.exp(logits - top).sum(-1, keepdims=True)))[:, 0]
    print(repr(float(np.mean(logz - logits[np.arange(n), tokens[1:]]))))


if __name__ == "__main__":
    main()
