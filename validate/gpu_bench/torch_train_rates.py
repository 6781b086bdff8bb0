#!/usr/bin/env python3
"""Single-GPU training-step times measured with PyTorch on a real GPU, for checking ddlsim's compute model.

Runs on a machine with an NVIDIA GPU and PyTorch (torchvision, transformers): for ResNet-50 (224x224, channels-last,
SGD with momentum), BERT-large (sequence 128, masked LM + next sentence, AdamW) and GPT-2 124M (sequence 1024, AdamW),
in bf16 autocast, it times full training steps (forward, backward, optimizer step) on random data at several batch
sizes, eagerly and, for ResNet-50, captured whole in a CUDA graph (PyTorch's "whole-network capture",
docs/source/notes/cuda.rst). Times are CUDA-event times over `--iters` steps after `--warmup` steps.

These are measurements for *checking* ddlsim (validate/gpu_bench/compare.py), never for fitting its constants.
usage: torch_train_rates.py OUT.json [--quick]
"""
import json
import sys
import time


def main():
    import torch

    out_path = sys.argv[1]
    quick = "--quick" in sys.argv
    warmup, iters = (3, 10) if quick else (5, 20)
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    result = {
        "format": "ddlsim-gpu-bench-1",
        "device": torch.cuda.get_device_name(0),
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "precision": "bf16",
        "warmup": warmup,
        "iters": iters,
        "rows": [],
    }

    def save():
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)

    def timed(step):
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(iters):
            step()
        stop.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / iters
        return start.elapsed_time(stop) / 1e3 / iters, wall

    def record(model, batch, mode, fn):
        row = {"model": model, "batch": batch, "mode": mode}
        try:
            step_s, wall_s = fn()
            row.update(step_s=step_s, wall_s=wall_s, samples_per_s=batch / step_s)
            print(f"{model:9s} batch {batch:4d} {mode:10s} {step_s * 1e3:9.3f} ms  {batch / step_s:9.1f} samples/s",
                  flush=True)
        except Exception as e:  # noqa: BLE001 - one failed row must not lose the others
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            print(f"{model} batch {batch} {mode}: {row['error']}", flush=True)
        result["rows"].append(row)
        save()
        torch.cuda.empty_cache()

    # ResNet-50
    import torchvision

    def resnet(batch, graphed):
        model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        crit = torch.nn.CrossEntropyLoss()
        x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = crit(model(x), y)
            loss.backward()
            opt.step()

        if not graphed:
            return timed(step)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                loss = crit(model(x), y)
            loss.backward()
            opt.step()
        return timed(g.replay)

    batches = [1, 8, 32, 128, 256] if not quick else [8, 128]
    for b in batches:
        record("resnet50", b, "eager", lambda b=b: resnet(b, False))
        record("resnet50", b, "cuda_graph", lambda b=b: resnet(b, True))

    # BERT-large and GPT-2 (transformers, randomly initialised: no download)
    import transformers

    def bert(batch):
        cfg = transformers.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                      intermediate_size=4096)
        model = transformers.BertForPreTraining(cfg).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, cfg.vocab_size, (batch, 128), device=dev)
        nsp = torch.randint(0, 2, (batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids, next_sentence_label=nsp).loss
            loss.backward()
            opt.step()

        return timed(step)

    def gpt2(batch):
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, 50257, (batch, 1024), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()

        return timed(step)

    for b in ([8, 32, 64] if not quick else [32]):
        record("bert_large", b, "eager", lambda b=b: bert(b))
    for b in ([4, 8, 16] if not quick else [8]):
        record("gpt2", b, "eager", lambda b=b: gpt2(b))
    save()


if __name__ == "__main__":
    main()
