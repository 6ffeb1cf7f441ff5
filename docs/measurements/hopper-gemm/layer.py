import json, os, time, torch
import torch.nn.functional as F
dev = "cuda"; dt = torch.bfloat16
h, inter, nh, nkv, hd, L = 5120, 17408, 40, 8, 128, 40   # Qwen3-14B
def rms(x, w): return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(dt) * w
W = dict(qkv=torch.randn(h, (nh + 2 * nkv) * hd, device=dev, dtype=dt) * .02, o=torch.randn(nh * hd, h, device=dev, dtype=dt) * .02,
         gu=torch.randn(h, 2 * inter, device=dev, dtype=dt) * .02, d=torch.randn(inter, h, device=dev, dtype=dt) * .02,
         n1=torch.ones(h, device=dev, dtype=dt), n2=torch.ones(h, device=dev, dtype=dt), qn=torch.ones(hd, device=dev, dtype=dt), kn=torch.ones(hd, device=dev, dtype=dt))
def layer(x):
    T = x.shape[0]
    y = rms(x, W["n1"]) @ W["qkv"]
    q, k, v = y.split([nh * hd, nkv * hd, nkv * hd], -1)
    q = rms(q.view(T, nh, hd), W["qn"]).transpose(0, 1)[None]
    k = rms(k.view(T, nkv, hd), W["kn"]).transpose(0, 1)[None]
    v = v.view(T, nkv, hd).transpose(0, 1)[None]
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    x = x + a[0].transpose(0, 1).reshape(T, nh * hd) @ W["o"]
    g, u = (rms(x, W["n2"]) @ W["gu"]).chunk(2, -1)
    return x + (F.silu(g) * u) @ W["d"]
res = {}
flops_tok = 2 * L * (h * (nh + 2 * nkv) * hd + nh * hd * h + 3 * h * inter)
for T in [1024, 2048, 4096, 8192]:
    x = torch.randn(T, h, device=dev, dtype=dt)
    with torch.no_grad():
        for _ in range(3):
            y = x
            for _ in range(L): y = layer(y)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); n = 5
        for _ in range(n):
            y = x
            for _ in range(L): y = layer(y)
        e.record(); torch.cuda.synchronize()
    ms = s.elapsed_time(e) / n
    attn = 4 * L * nh * hd * T * T / 2
    res[T] = dict(ms=round(ms, 2), linear_tflops=round(T * flops_tok / ms / 1e9, 1), linear_eff=round(T * flops_tok / (ms / 1e3) / 989e12, 3), attn_share=round(attn / (attn + T * flops_tok), 3))
    print(T, res[T], flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "/tmp"), "layer.json"), "w"))
