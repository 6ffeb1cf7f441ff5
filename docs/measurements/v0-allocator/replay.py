# The V0 profile forward's activations, replayed through PyTorch's own caching allocator: each
# trace in traces.json is the sequence of requests (bytes allocated, tensors freed) that the
# simulator's allocator model sees for one model and batch (server/sim/v0forward.go, written out
# by `VLLMTOP_V0_TRACE_OUT=traces.json go test ./server/sim -run TestV0ForwardTraces`). Here the
# same requests go to torch.empty on the GPU, and what torch then holds is compared with the
# model: the reserved segments (what a V0 worker read as used through torch.cuda.mem_get_info)
# and the allocated peak.
# Run: OUT=/some/dir python3 replay.py (a CUDA GPU and PyTorch, default allocator settings);
# it writes replay.json there.
import json, os
import torch

out = os.environ.get("OUT", "/tmp")
here = os.path.dirname(os.path.abspath(__file__))
traces = json.load(open(os.path.join(here, "traces.json")))


def replay(events):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base_reserved = torch.cuda.memory_reserved()
    base_alloc = torch.cuda.memory_allocated()
    free_before, _ = torch.cuda.mem_get_info()
    live = {}
    for e in events:
        if e.get("free"):
            del live[e["id"]]
        else:
            live[e["id"]] = torch.empty(e["bytes"], dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    result = {
        "reserved_bytes": torch.cuda.memory_reserved() - base_reserved,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() - base_alloc,
        "mem_get_info_used_bytes": free_before - free_after,
        "segments": sum(1 for s in torch.cuda.memory_snapshot() if s["device"] == 0),
    }
    live.clear()
    return result


results = []
for t in traces:
    r = replay(t["events"])
    r["name"] = t["name"]
    r["model_reserved_bytes"] = t["model_reserved_bytes"]
    r["ratio_to_model"] = round(r["reserved_bytes"] / t["model_reserved_bytes"], 4)
    results.append(r)
    print(f'{t["name"]}: torch reserved {r["reserved_bytes"] / 2**30:.3f} GiB, model {t["model_reserved_bytes"] / 2**30:.3f}, '
          f'peak allocated {r["peak_allocated_bytes"] / 2**30:.3f}, mem_get_info {r["mem_get_info_used_bytes"] / 2**30:.3f}')

doc = {
    "gpu": torch.cuda.get_device_name(0),
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    "results": results,
}
with open(os.path.join(out, "replay.json"), "w") as f:
    json.dump(doc, f, indent=1)
