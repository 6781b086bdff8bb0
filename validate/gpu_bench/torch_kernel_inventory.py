#!/usr/bin/env python3
"""Which operators launch the kernels of one eager PyTorch training step (an inventory for ddlsim's kernel counts).

Runs on a machine with an NVIDIA GPU and PyTorch (torchvision, transformers). For ResNet-50 at batch 1, BERT-large
at batch 8 (sequence 128) and GPT-2 124M at batch 4 (sequence 1024), built and trained as torch_train_rates.py
does (bf16 autocast, eager), it profiles one step with torch.profiler (CPU and CUDA) and counts, per ATen operator,
the kernels that operator launched itself, and per kernel name the launches.
usage: torch_kernel_inventory.py OUT.json
"""
import json
import sys


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile

    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    out = {"format": "ddlsim-gpu-kernel-inventory-1", "device": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "steps": []}

    def inventory(name, step):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        by_op, by_kernel, total = {}, {}, 0
        for e in prof.events():
            if e.kernels:
                by_op[e.name] = by_op.get(e.name, 0) + len(e.kernels)
                for k in e.kernels:
                    kn = k.name[:90]
                    by_kernel[kn] = by_kernel.get(kn, 0) + 1
                    total += 1
        row = {"name": name, "kernels": total,
               "by_operator": dict(sorted(by_op.items(), key=lambda kv: -kv[1])),
               "by_kernel": dict(sorted(by_kernel.items(), key=lambda kv: -kv[1])[:60])}
        print(f"{name}: {total} kernels", flush=True)
        for op, n in list(row["by_operator"].items())[:40]:
            print(f"  {n:5d}  {op}", flush=True)
        out["steps"].append(row)
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)

    from steps import bert_large_step, gpt2_step, resnet50_step

    inventory("resnet50_b1", resnet50_step(1, dev))
    inventory("bert_large_b8", bert_large_step(8, dev))
    inventory("gpt2_b4", gpt2_step(4, dev))


if __name__ == "__main__":
    main()
