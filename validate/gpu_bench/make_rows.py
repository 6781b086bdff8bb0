#!/usr/bin/env python3
"""Writes the eager rows of a torch_train_rates.py measurement as published-report rows (kind single_gpu).

usage: make_rows.py MEASUREMENT.json FOLDER
One file per eager row, FOLDER/<model>_b<batch>_eager.json, with the ddlsim scenario a new user would write: one
GPU by name, bf16 AMP, the eager software profile, the built-in model at the measured batch. The CUDA-graph rows stay
in the measurement file only: PyTorch's whole-step capture removes the host's launches but fuses nothing, which none
of ddlsim's software profiles is (`optimized` also fuses BatchNorm + add + ReLU), so they would not check one.
"""
import json
import os
import sys

DEVICE = {"NVIDIA H200": "H200", "NVIDIA H100 80GB HBM3": "H100"}
SETUP = {
    "resnet50": "torchvision ResNet-50 (224x224, channels-last), SGD with momentum",
    "bert_large": "transformers BertForPreTraining, BERT-large (24 layers, 1024 hidden), sequence 128, fused AdamW",
    "gpt2": "transformers GPT2LMHeadModel, GPT-2 124M, sequence 1024, fused AdamW",
}


def main():
    path, folder = sys.argv[1], sys.argv[2]
    m = json.load(open(path))
    device = DEVICE[m["device"]]
    os.makedirs(folder, exist_ok=True)
    for r in m["rows"]:
        if r["mode"] != "eager" or "error" in r:
            continue
        name = f"{r['model']}_b{r['batch']}_eager"
        row = {
            "source": {
                "repository": "this repository",
                "path": f"{path} (measured by validate/gpu_bench/torch_train_rates.py)",
                "commit": "the commit that added this folder",
                "description": f"One {m['device']} lent to a development session, PyTorch {m['torch']} (CUDA "
                               f"{m['cuda']}, cuDNN {m['cudnn']}): a full training step (forward, backward, optimizer "
                               f"step) on random data in bf16 autocast, eager, timed with CUDA events over "
                               f"{m['iters']} steps after {m['warmup']}.",
            },
            "setup": f"{SETUP[r['model']]}; batch {r['batch']}; one {m['device']}; PyTorch eager, bf16 autocast.",
            "kind": "single_gpu",
            "measured": {"metric": "throughput_samples_per_s", "value": round(r["samples_per_s"], 1),
                         "unit": "samples/s"},
            "scenario": {
                "description": f"{r['model']} on one {device}, bf16, PyTorch eager, batch {r['batch']}",
                "workers": 1,
                "model": r["model"],
                "batch_size": r["batch"],
                "iterations": 3,
                "device": {"name": device, "precision": "bf16", "software": "eager"},
                "network": {"topology": "star", "bandwidth": "100Gbps", "latency": "5us"},
            },
        }
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(row, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
