#!/usr/bin/env python3
"""The host's time per GPU kernel in PyTorch eager training, measured apart from any model it is checked on.

Runs on a machine with an NVIDIA GPU and PyTorch. Three chains of tiny operations, each far too small to keep the
GPU busy, so that a training step (forward + backward, autograd, bf16 autocast) takes what the host needs to issue
its kernels: (a) element-wise tensor functions, (b) nn.Linear(64, 64) modules (cuBLAS), (c) nn.Conv2d(8, 8, 3) +
BatchNorm2d + ReLU modules on 1x8x8x8 channels-last (cuDNN). For each: the kernels one step launches (counted with
torch.profiler), the step's time, and the time per kernel. It also counts the kernels of one eager training step of
the models torch_train_rates.py times (ResNet-50, BERT-large, GPT-2), to check ddlsim's kernel counts.
usage: torch_host_cost.py OUT.json
"""
import json
import sys
import time


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile

    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    result = {"format": "ddlsim-gpu-host-cost-1", "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "chains": [], "model_kernels": []}

    def save():
        with open(sys.argv[1], "w") as f:
            json.dump(result, f, indent=1)

    def kernels(step):  # run last for each chain: see per_step
        step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)

    def per_step(step, n=50):
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    def chain_step(model, x):
        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = model(x)
            y.float().sum().backward()
        return step

    class Elementwise(torch.nn.Module):
        def forward(self, x):
            for _ in range(100):
                x = torch.mul(x, 1.0001)
                x = torch.add(x, 0.0001)
            return x

    lin = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(64)]).to(dev)
    conv = torch.nn.Sequential(*[m for _ in range(32) for m in (torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
                                                                torch.nn.BatchNorm2d(8), torch.nn.ReLU())])
    conv = conv.to(dev).to(memory_format=torch.channels_last)
    chains = [("elementwise", chain_step(Elementwise(), torch.randn(1024, device=dev, requires_grad=True))),
              ("linear", chain_step(lin, torch.randn(8, 64, device=dev))),
              ("conv_bn_relu", chain_step(conv, torch.randn(1, 8, 8, 8, device=dev).to(
                  memory_format=torch.channels_last)))]

    # One eager training step of the checked models (smallest batch, as torch_train_rates.py builds them).
    from steps import bert_large_step, resnet50_step

    models = [("resnet50_b1", resnet50_step(1, dev)), ("bert_large_b8", bert_large_step(8, dev))]

    # All timings first, then the kernel counts: a profiler, once attached, slows every later launch (seen: the
    # ResNet-50 step at batch 1 took 29.4 ms after profiling against 14.5 ms in a fresh process).
    times = {name: per_step(step, 50 if i < len(chains) else 20) for i, (name, step) in enumerate(chains + models)}
    for name, step in chains + models:
        k = kernels(step)
        t = times[name]
        row = {"name": name, "kernels_per_step": k, "step_s": t, "host_s_per_kernel": t / k}
        print(f"{name:14s} {k:5d} kernels  {t * 1e3:8.3f} ms/step  {t / k * 1e6:6.2f} us/kernel", flush=True)
        result["chains" if (name, step) in chains else "model_kernels"].append(row)
        save()


if __name__ == "__main__":
    main()
