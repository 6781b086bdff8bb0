"""One eager PyTorch training step of the checked models, built as torch_train_rates.py builds them (bf16 autocast,
random data): shared by torch_host_cost.py and torch_kernel_inventory.py."""
import torch


def train_step(model, opt, loss_fn):
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model)
        loss.backward()
        opt.step()
    return step


def resnet50_step(batch, dev):
    import torchvision
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    crit = torch.nn.CrossEntropyLoss()
    return train_step(model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), lambda m: crit(m(x), y))


def bert_large_step(batch, dev):
    import transformers
    cfg = transformers.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                  intermediate_size=4096)
    model = transformers.BertForPreTraining(cfg).to(dev)
    ids = torch.randint(0, cfg.vocab_size, (batch, 128), device=dev)
    nsp = torch.randint(0, 2, (batch,), device=dev)
    return train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True),
                      lambda m: m(input_ids=ids, labels=ids, next_sentence_label=nsp).loss)


def gpt2_step(batch, dev):
    import transformers
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).to(dev)
    ids = torch.randint(0, 50257, (batch, 1024), device=dev)
    return train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True),
                      lambda m: m(input_ids=ids, labels=ids).loss)
