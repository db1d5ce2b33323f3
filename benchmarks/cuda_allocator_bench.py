"""What the CUDA allocator probe's figures look like in a vLLM-shaped process, on a real GPU. Prints JSON.

    python benchmarks/cuda_allocator_bench.py [--steps 1500] [--seed 1] [--embeddings N]

Needs torch and a CUDA device; not part of the test suite. One process lays out GPU memory the way a vLLM
engine does with the defaults: the weights of an 8B model (32 layers, hidden 4096, bf16), then, after a
profiling pass at the largest batch, a KV cache sized so that everything reserved is 90% of the GPU
(`--gpu-memory-utilization 0.9`). Then it runs forward-pass-shaped allocations for `--steps` batches of a
random number of tokens (decode-sized most of the time, prefill-sized sometimes): each layer's intermediate
tensors, freed as the layer ends, and the logits. After each step it reads `torch.cuda.memory_stats()` as the
probe does and reports the distribution of:

- `inactive_split_bytes / reserved_bytes`: what obspack_cuda_allocator_fragmentation_ratio was first;
- `inactive_split_bytes / (reserved_bytes - allocated_bytes)`: what it is now, the share of the memory the
  allocator holds unused that sits in split blocks;
- `inactive_split_bytes`, `reserved_bytes - allocated_bytes`, and `reserved_bytes`, in GiB;
- batches that failed with an out-of-memory error, and the allocator's retries and OOMs at the end.

`--embeddings N` also keeps buffers alive across batches, as a multimodal engine keeps image embeddings:
what splits the cache. Run it with and without PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the
runbook's remedy). docs/exporter.md, "On a real GPU", has the numbers of an H100.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

GIB = 1 << 30
HIDDEN, INTERMEDIATE, LAYERS, VOCAB, HEADS_KV, HEAD_DIM = 4096, 14336, 32, 128256, 8, 128
MAX_TOKENS = 8192  # --max-num-batched-tokens


def _weights(torch: object) -> list:
    bf16 = torch.bfloat16  # type: ignore[attr-defined]
    empty = torch.empty  # type: ignore[attr-defined]
    weights = [
        empty((VOCAB, HIDDEN), dtype=bf16, device="cuda"),
        empty((VOCAB, HIDDEN), dtype=bf16, device="cuda"),
    ]
    for _ in range(LAYERS):
        weights += [
            empty((HIDDEN + 2 * HEADS_KV * HEAD_DIM, HIDDEN), dtype=bf16, device="cuda"),  # qkv
            empty((HIDDEN, HIDDEN), dtype=bf16, device="cuda"),  # o
            empty((2 * INTERMEDIATE, HIDDEN), dtype=bf16, device="cuda"),  # gate_up
            empty((HIDDEN, INTERMEDIATE), dtype=bf16, device="cuda"),  # down
            empty((HIDDEN,), dtype=bf16, device="cuda"),
            empty((HIDDEN,), dtype=bf16, device="cuda"),
        ]
    return weights


def _forward(torch: object, tokens: int, sampled: int) -> None:
    """The allocations of one forward pass: per layer, the intermediates, each freed when the layer ends."""
    bf16 = torch.bfloat16  # type: ignore[attr-defined]
    empty = torch.empty  # type: ignore[attr-defined]
    hidden = empty((tokens, HIDDEN), dtype=bf16, device="cuda")
    for _ in range(LAYERS):
        qkv = empty((tokens, HIDDEN + 2 * HEADS_KV * HEAD_DIM), dtype=bf16, device="cuda")
        attn = empty((tokens, HIDDEN), dtype=bf16, device="cuda")
        del qkv
        gate_up = empty((tokens, 2 * INTERMEDIATE), dtype=bf16, device="cuda")
        act = empty((tokens, INTERMEDIATE), dtype=bf16, device="cuda")
        del gate_up
        hidden = empty((tokens, HIDDEN), dtype=bf16, device="cuda")
        del act, attn
    logits = empty((sampled, VOCAB), dtype=torch.float32, device="cuda")  # type: ignore[attr-defined]
    probs = empty((sampled, VOCAB), dtype=torch.float32, device="cuda")  # type: ignore[attr-defined]
    del logits, probs, hidden


def _stats(torch: object) -> dict[str, float]:
    s = torch.cuda.memory_stats(0)  # type: ignore[attr-defined]
    return {
        "reserved": s["reserved_bytes.all.current"],
        "allocated": s["allocated_bytes.all.current"],
        "inactive_split": s["inactive_split_bytes.all.current"],
        "retries": s["num_alloc_retries"],
        "ooms": s["num_ooms"],
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "max": ordered[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--embeddings", type=int, default=0, metavar="N",
        help="also keep up to N multimodal embeddings (1 to 32 MiB, each for 20 to 200 steps) alive across steps",
    )  # fmt: skip
    args = parser.parse_args()
    import torch

    rng = random.Random(args.seed)
    started = time.perf_counter()
    weights = _weights(torch)
    torch.cuda.reset_peak_memory_stats()
    _forward(torch, MAX_TOKENS, 256)  # vLLM's profiling run at the largest batch
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    total = torch.cuda.mem_get_info()[1]
    kv_bytes = int(0.9 * total) - peak
    per_layer = kv_bytes // LAYERS
    kv = [torch.empty(per_layer, dtype=torch.uint8, device="cuda") for _ in range(LAYERS)]
    fragmentation, of_unused, split, unused, reserved = [], [], [], [], []
    embeddings: list[tuple[int, object]] = []  # (last step, tensor)
    failed = 0
    for step in range(args.steps):
        prefill = rng.random() < 0.2
        tokens = rng.randint(512, MAX_TOKENS) if prefill else rng.randint(1, 256)
        try:
            _forward(torch, tokens, min(tokens, 256))
            if args.embeddings and len(embeddings) < args.embeddings:
                size = rng.randint(1 << 20, 32 << 20)  # lands in a block the forward pass just freed
                embeddings.append(
                    (step + rng.randint(20, 200), torch.empty(size, dtype=torch.uint8, device="cuda"))
                )
        except torch.cuda.OutOfMemoryError:
            failed += 1
        embeddings = [(end, t) for end, t in embeddings if end > step]
        torch.cuda.synchronize()
        s = _stats(torch)
        fragmentation.append(s["inactive_split"] / s["reserved"])
        if s["reserved"] > s["allocated"]:
            of_unused.append(s["inactive_split"] / (s["reserved"] - s["allocated"]))
        split.append(s["inactive_split"] / GIB)
        unused.append((s["reserved"] - s["allocated"]) / GIB)
        reserved.append(s["reserved"] / GIB)
    end = _stats(torch)
    print(json.dumps({
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "gpu_gib": round(total / GIB, 1),
        "weights_gib": round(sum(w.numel() * w.element_size() for w in weights) / GIB, 1),
        "profiled_peak_gib": round(peak / GIB, 1),
        "kv_cache_gib": round(per_layer * len(kv) / GIB, 1),
        "steps": args.steps,
        "embeddings": args.embeddings,
        "fragmentation_ratio": _summary(fragmentation),
        "split_share_of_unused": _summary(of_unused),
        "reserved_gib": _summary(reserved),
        "steps_failed_oom": failed,
        "inactive_split_gib": _summary(split),
        "reserved_unused_gib": _summary(unused),
        "end": {k: (round(v / GIB, 2) if k in ("reserved", "allocated", "inactive_split") else v) for k, v in end.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }, sort_keys=True))  # fmt: skip


if __name__ == "__main__":
    main()
