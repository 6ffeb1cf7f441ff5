import json, os, subprocess, sys, threading, time
import torch
out = os.environ.get("OUT", "/tmp")
dev = torch.device("cuda")
h, inter, qkv = 5120, 17408, 7168   # Qwen3-14B's linear layers
layers = 40
def mats(M):
    X = torch.randn(M, h, device=dev, dtype=torch.bfloat16)
    Ws = [torch.randn(h, qkv, device=dev, dtype=torch.bfloat16) * 0.02,
          torch.randn(h, h, device=dev, dtype=torch.bfloat16) * 0.02,
          torch.randn(h, 2 * inter, device=dev, dtype=torch.bfloat16) * 0.02,
          torch.randn(inter, h, device=dev, dtype=torch.bfloat16) * 0.02]
    A = torch.randn(M, inter, device=dev, dtype=torch.bfloat16)
    return X, Ws, A
def forward(X, Ws, A):
    for _ in range(layers):
        torch.matmul(X, Ws[0]); torch.matmul(X, Ws[1]); torch.matmul(X, Ws[2]); torch.matmul(A, Ws[3])
flops_tok = 2 * layers * (h * qkv + h * h + h * 2 * inter + inter * h)
samples = []
stop = False
def smi():
    while not stop:
        try:
            r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
            samples.append((time.time(), r.stdout.strip()))
        except Exception as e:
            samples.append((time.time(), "err " + str(e)))
        time.sleep(1)
threading.Thread(target=smi, daemon=True).start()
res = {}
for M, secs in [(8192, 150), (2048, 30), (8192, 20)]:
    X, Ws, A = mats(M)
    forward(X, Ws, A); torch.cuda.synchronize()
    t0 = time.time(); windows = []
    while time.time() - t0 < secs:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); n = 0
        w0 = time.time()
        while time.time() - w0 < 2.0:
            forward(X, Ws, A); n += 1
            if n % 4 == 0: torch.cuda.synchronize()
        e.record(); torch.cuda.synchronize()
        ms = s.elapsed_time(e)
        windows.append([round(time.time() - t0, 1), round(n * M * flops_tok / (ms / 1e3) / 1e12, 1)])
        print(M, windows[-1], samples[-1] if samples else "", flush=True)
    res[f"M{M}_{len(res)}"] = windows
stop = True
json.dump({"windows": res, "smi": samples, "gpu": torch.cuda.get_device_name()}, open(os.path.join(out, "sustained.json"), "w"))
