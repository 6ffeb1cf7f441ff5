# The V1 dummy sampler run on the PyTorch-native top-k/top-p path (vLLM 0.11.x, and any
# release where FlashInfer's sampler is absent or off and the Triton kernel is not yet there),
# replayed with torch alone: bf16 logits, their float32 copy, greedy argmax, temperature,
# the sort-based top-k/top-p masks, the re-scatter, softmax and the exponential draw.
# It prints torch's allocated peak over the run, per logits entry (rows x vocabulary),
# counting the bf16 logits themselves.
# Run: OUT=/some/dir python3 sort_path.py (a CUDA GPU and PyTorch); it writes sort_path.json there.
import json, os, sys
import torch

out = os.environ.get("OUT", "/tmp")
dev = torch.device("cuda")


def apply_top_k_top_p(logits, k, p):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    top_k_mask = logits_sort.size(1) - k.to(torch.long)
    top_k_mask = logits_sort.gather(1, top_k_mask.unsqueeze(dim=1))
    top_k_mask = logits_sort < top_k_mask
    logits_sort.masked_fill_(top_k_mask, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
    top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)
    top_p_mask[:, -1] = False
    logits_sort.masked_fill_(top_p_mask, -float("inf"))
    return logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)


def random_sample(probs):
    q = torch.empty_like(probs)
    q.exponential_()
    return probs.div_(q).argmax(dim=-1).view(-1)


def sampler(logits_model_dtype, temperature, k, p):
    logits = logits_model_dtype.to(torch.float32)
    greedy = logits.argmax(dim=-1).view(-1)
    temp = torch.where(temperature < 1e-5, 1.0, temperature)
    logits = logits.div_(temp.unsqueeze(dim=1))
    logits = apply_top_k_top_p(logits, k, p)
    probs = logits.softmax(dim=-1, dtype=torch.float32)
    sampled = random_sample(probs)
    return torch.where(temperature < 1e-5, greedy, sampled, out=greedy)


def run(rows, vocab, what):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    logits = torch.randn(rows, vocab, device=dev, dtype=torch.bfloat16)
    temperature = torch.full((rows,), 0.5, device=dev)
    if what == "sampler":
        k = torch.full((rows,), vocab - 1, device=dev, dtype=torch.int32)
        p = torch.full((rows,), 0.9, device=dev)
        sampler(logits, temperature, k, p)
    else:
        logits.to(torch.float32).sort(dim=-1, descending=False)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    entries = rows * vocab
    return {"rows": rows, "vocab": vocab, "what": what, "peak_bytes": peak,
            "bytes_per_entry": round(peak / entries, 3)}


results = []
shapes = [(1024, 201088), (1024, 151936), (256, 151936), (256, 32000), (512, 128256),
          (128, 151936), (127, 151936), (64, 151936), (1, 151936)]
for rows, vocab in shapes:
    for what in ("sampler", "sort"):
        r = run(rows, vocab, what)
        results.append(r)
        print(json.dumps(r), flush=True)
json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "results": results},
          open(os.path.join(out, "sort_path.json"), "w"), indent=1)
