#!/usr/bin/env python3
"""Writes megatron_theoretical.csv: Megatron-LM's own report_theoretical_memory on a grid.

Usage: megatron_theoretical.py PATH/TO/theoretical_memory_usage.py > megatron_theoretical.csv

PATH is megatron/training/theoretical_memory_usage.py from NVIDIA/Megatron-LM (the CSV in this
folder was made from commit 1bcb3b9e0b). The file is loaded as it is, with its two helpers from
megatron.training.utils replaced by stand-ins (it uses them to print and to reject hybrid Mamba
models); no other part of Megatron-LM, and no torch, is needed.

Each row is one launch line (the flags plan reads), the world size and the number of
microbatches, then Megatron's three results printed with repr(), so tests/test_plan.cpp can
require pipesched::plan::megatron_theoretical to agree to the last bit.
"""
import importlib.util
import io
import math
import sys
import types
from contextlib import redirect_stdout


def load(path):
    utils = types.ModuleType("mt_pkg.utils")
    utils.is_hybrid_model = lambda args: False
    utils.print_rank_0 = lambda *a, **k: None
    pkg = types.ModuleType("mt_pkg")
    pkg.__path__ = []
    sys.modules["mt_pkg"] = pkg
    sys.modules["mt_pkg.utils"] = utils
    spec = importlib.util.spec_from_file_location("mt_pkg.theoretical", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def namespace(case):
    """Megatron's argument namespace for a case, with Megatron's defaults and derived values."""
    a = types.SimpleNamespace()
    a.num_layers = case["layers"]
    a.hidden_size = case["hidden"]
    a.num_attention_heads = case["heads"]
    a.kv_channels = case.get("kv_channels", a.hidden_size // a.num_attention_heads)
    a.group_query_attention = "groups" in case
    a.num_query_groups = case.get("groups", 1)
    a.swiglu = case.get("swiglu", False)
    a.ffn_hidden_size = case.get("ffn") or (
        int((4 * a.hidden_size * 2 / 3) / 64) * 64 if a.swiglu else 4 * a.hidden_size)
    a.normalization = case.get("norm", "LayerNorm")
    a.untie_embeddings_and_output_weights = case.get("untie", False)
    tp = case.get("tp", 1)
    multiple = 128 * tp
    a.padded_vocab_size = (case["vocab"] + multiple - 1) // multiple * multiple
    a.num_experts = case.get("experts")
    a.moe_ffn_hidden_size = case.get("moe_ffn", a.ffn_hidden_size if a.num_experts else None)
    a.moe_router_topk = case.get("topk", 2)
    freq = case.get("moe_freq", 1)
    a.moe_layer_freq = eval(freq) if isinstance(freq, str) else freq  # "([0]*1+[1]*3)" as Megatron's parser does
    a.moe_shared_expert_intermediate_size = case.get("shared_ffn")
    a.moe_shared_expert_gate = case.get("shared_gate", False)
    a.moe_latent_size = None
    a.add_bias_linear = not case.get("no_bias", False)
    a.mtp_num_layers = case.get("mtp")
    a.multi_latent_attention = "kv_lora" in case
    a.q_lora_rank = case.get("q_lora")
    a.kv_lora_rank = case.get("kv_lora")
    a.qk_head_dim = case.get("qk_head")
    a.qk_pos_emb_head_dim = case.get("qk_pos")
    a.v_head_dim = case.get("v_head")
    a.tensor_model_parallel_size = tp
    a.pipeline_model_parallel_size = case.get("pp", 1)
    a.context_parallel_size = case.get("cp", 1)
    a.expert_model_parallel_size = case.get("ep", 1)
    a.expert_tensor_parallel_size = case.get("etp", tp)
    a.world_size = case["world"]
    a.data_parallel_size = a.world_size // (tp * a.pipeline_model_parallel_size * a.context_parallel_size)
    a.virtual_pipeline_model_parallel_size = case.get("vp")
    a.use_distributed_optimizer = case.get("dist_opt", False)
    a.sequence_parallel = case.get("sp", False) and tp > 1
    a.recompute_granularity = case.get("recompute")
    a.seq_length = case["seq"]
    a.micro_batch_size = case.get("mbs", 1)
    return a


def launch_line(case):
    words = ["--num-layers", case["layers"], "--hidden-size", case["hidden"],
             "--num-attention-heads", case["heads"], "--seq-length", case["seq"],
             "--micro-batch-size", case.get("mbs", 1), "--vocab-size", case["vocab"]]
    flag = {"kv_channels": "--kv-channels", "groups": "--num-query-groups", "ffn": "--ffn-hidden-size",
            "norm": "--normalization", "experts": "--num-experts", "moe_ffn": "--moe-ffn-hidden-size",
            "topk": "--moe-router-topk", "moe_freq": "--moe-layer-freq",
            "shared_ffn": "--moe-shared-expert-intermediate-size", "mtp": "--mtp-num-layers",
            "q_lora": "--q-lora-rank", "kv_lora": "--kv-lora-rank", "qk_head": "--qk-head-dim",
            "qk_pos": "--qk-pos-emb-head-dim", "v_head": "--v-head-dim",
            "tp": "--tensor-model-parallel-size", "pp": "--pipeline-model-parallel-size",
            "cp": "--context-parallel-size", "ep": "--expert-model-parallel-size",
            "etp": "--expert-tensor-parallel-size", "vp": "--num-virtual-stages-per-pipeline-rank",
            "recompute": "--recompute-granularity"}
    switch = {"swiglu": "--swiglu", "untie": "--untie-embeddings-and-output-weights",
              "shared_gate": "--moe-shared-expert-gate", "no_bias": "--disable-bias-linear",
              "dist_opt": "--use-distributed-optimizer", "sp": "--sequence-parallel"}
    for key, name in flag.items():
        if key in case:
            words += [name, case[key]]
    for key, name in switch.items():
        if case.get(key):
            words.append(name)
    if "groups" in case:
        words.append("--group-query-attention")
    if "kv_lora" in case:
        words.append("--multi-latent-attention")
    return " ".join(str(w) for w in words)


GPT = dict(layers=24, hidden=2048, heads=16, vocab=50257, seq=2048)
LLAMA = dict(layers=32, hidden=4096, heads=32, groups=8, ffn=14336, vocab=128256, seq=8192, swiglu=True,
             norm="RMSNorm", untie=True, no_bias=True)
MOE = dict(layers=16, hidden=2048, heads=16, groups=4, ffn=8192, vocab=32000, seq=4096, swiglu=True,
           norm="RMSNorm", untie=True, no_bias=True, experts=8, moe_ffn=1408, topk=2)
MLA = dict(layers=8, hidden=2048, heads=16, ffn=10944, vocab=102400, seq=4096, swiglu=True, norm="RMSNorm",
           untie=True, no_bias=True, experts=64, moe_ffn=1408, topk=6, shared_ffn=2816,
           moe_freq="([0]*1+[1]*7)", kv_lora=512, qk_head=128, qk_pos=64, v_head=128)

CASES = []
for base in (GPT, LLAMA, MOE, MLA):
    for tp, pp, world in ((1, 1, 8), (2, 1, 8), (4, 2, 16), (8, 4, 64)):
        for sp, recompute in ((False, None), (True, "selective"), (True, None), (False, "full")):
            for dist_opt in (False, True):
                case = dict(base, tp=tp, pp=pp, world=world, sp=sp, dist_opt=dist_opt)
                if recompute:
                    case["recompute"] = recompute
                CASES.append((case, 8))
# Interleaving, MTP, shared-expert gate, EP and expert TP, CP, micro-batch, fewer microbatches than PP.
CASES += [
    (dict(LLAMA, tp=4, pp=4, vp=2, world=32, sp=True, recompute="selective", dist_opt=True), 16),
    (dict(LLAMA, tp=2, pp=4, vp=4, world=16, dist_opt=True), 8),
    (dict(LLAMA, tp=2, pp=4, world=16, mbs=2), 3),
    (dict(LLAMA, tp=2, pp=2, cp=2, world=16, sp=True, recompute="selective"), 4),
    (dict(MOE, tp=2, pp=2, ep=4, world=16, dist_opt=True), 8),
    (dict(MOE, tp=2, pp=2, ep=4, etp=1, world=16, dist_opt=True, shared_ffn=2816, shared_gate=True), 8),
    (dict(MOE, tp=1, pp=4, ep=8, world=32, moe_freq=2, mtp=1, dist_opt=True), 8),
    (dict(MLA, tp=1, pp=2, ep=4, world=8, mtp=1, q_lora=1536, dist_opt=True), 4),
    (dict(MLA, tp=2, pp=1, ep=2, world=8, sp=True, recompute="selective"), 4),
    (dict(GPT, tp=1, pp=1, world=1, norm="RMSNorm", kv_channels=64, heads=8), 1),
]


def main():
    module = load(sys.argv[1])
    print("launch_line,world,microbatches,weight_and_optimizer_mb,activation_mb,total_mb")
    for case, microbatches in CASES:
        args = namespace(case)
        with redirect_stdout(io.StringIO()):
            w, act, total = module.report_theoretical_memory(args, num_microbatches=microbatches)
        print(f"{launch_line(case)},{case['world']},{microbatches},{w!r},{act!r},{total!r}")


if __name__ == "__main__":
    main()
