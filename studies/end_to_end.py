"""End-to-end training throughput per GPU: kimi-k2 on 512 GB300 GPUs (several NVL72 racks), EP 32,
MXFP8 routed experts and a BF16 shared expert, MoK vs the DeepEP baseline (published: 1.41x).

The MoE layers come from the model (forward + backward latency per layer); everything else
(attention, the dense layer, the LM head) is FLOPs at a stated MFU. Ideal pipeline/data parallelism:
no bubbles, gradient reduction and optimizer step hidden or excluded."""

from __future__ import annotations

from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario

from .common import Options, md_table, new_figure, outputs, params_for, save_figure, write_csv, write_summary
from .runner import sweep

NAME = "end-to-end"
TITLE = "End-to-end training throughput per GPU: kimi-k2 on 512 GB300 GPUs, EP 32 (MoK vs DeepEP)"
HARDWARE, MODEL, EP, GPUS, PRECISION = "gb300-nvl72", "kimi-k2", 32, 512, "mxfp8"
TOKENS = (2048, 4096, 8192)  # tokens per GPU per micro-batch
HEADLINE_TOKENS, HEADLINE_MFU = 4096, 0.40
MFUS = (0.30, 0.40, 0.50)
PUBLISHED = 1.41
SYSTEMS = ("mok", "deepep")

# Kimi K2's non-MoE shape (its public config; assumption: these values are not in our facts file).
ATTN = {"heads": 64, "q_lora": 1536, "kv_lora": 512, "qk_nope": 128, "qk_rope": 64, "v_head": 128}
VOCAB, DENSE_FFN, SEQ = 163_840, 18_432, 4096


def non_moe_flops_per_token(model, seq: int = SEQ) -> dict[str, float]:
    """Training FLOPs (forward + backward = 3 x forward) per token outside the routed/shared experts."""
    H, a = model.hidden, ATTN
    qk = a["qk_nope"] + a["qk_rope"]
    attn_params = (H * a["q_lora"] + a["q_lora"] * a["heads"] * qk  # q down / up
                   + H * (a["kv_lora"] + a["qk_rope"]) + a["kv_lora"] * a["heads"] * (a["qk_nope"] + a["v_head"])
                   + a["heads"] * a["v_head"] * H)  # kv down / up, output
    scores = 2.0 * (seq / 2) * a["heads"] * (qk + a["v_head"])  # QK^T and AV, causal mean context S/2
    dense_layers = model.layers - model.moe_layers
    fwd = {"attention_proj": 2.0 * attn_params * model.layers, "attention_scores": scores * model.layers,
           "dense_ffn": 2.0 * 3 * H * DENSE_FFN * dense_layers, "lm_head": 2.0 * H * VOCAB,
           "router": 2.0 * H * model.routed_experts * model.moe_layers}
    return {k: 3.0 * v for k, v in fwd.items()}


def _point(pt: dict) -> dict:
    scn = Scenario(load_hardware(HARDWARE), load_model(MODEL), EP, pt["tokens"], pt["pass"], PRECISION,
                   "uniform", pt["seed"])
    params, _ = params_for(HARDWARE)
    pred = predict(scn, None, pt["system"], params, pt["engine"])
    return {"tokens": pt["tokens"], "system": pt["system"], "pass": pt["pass"], "layer_ms": pred.latency_ms}


def throughput(layer: list[dict], tokens: int, mfu: float) -> dict:
    """Tokens/s/GPU of both systems at one micro-batch size and MFU."""
    m = load_model(MODEL)
    hw = load_hardware(HARDWARE)
    flops = sum(non_moe_flops_per_token(m).values())
    non_moe_s = tokens * flops / (mfu * hw.bf16_tflops * 1e12)
    row = {"tokens": tokens, "mfu": mfu, "non_moe_ms": non_moe_s * 1e3}
    for s in SYSTEMS:
        f, b = (next(r["layer_ms"] for r in layer if (r["tokens"], r["system"], r["pass"]) == (tokens, s, p))
                for p in ("fwd", "bwd"))
        moe_s = m.moe_layers * (f + b) * 1e-3
        row.update({f"{s}_moe_fwd_ms": f, f"{s}_moe_bwd_ms": b, f"{s}_moe_total_ms": moe_s * 1e3,
                    f"{s}_tokens_per_s_per_gpu": tokens / (non_moe_s + moe_s)})
    row["speedup"] = row["mok_tokens_per_s_per_gpu"] / row["deepep_tokens_per_s_per_gpu"]
    # the MFU at which the model would give the published speedup (None if unreachable)
    md, mk = row["deepep_moe_total_ms"], row["mok_moe_total_ms"]
    a_ms = (md - PUBLISHED * mk) / (PUBLISHED - 1)
    row["mfu_for_published"] = (tokens * flops / (hw.bf16_tflops * 1e12) * 1e3 / a_ms) if a_ms > 0 else float("nan")
    return row


def _mfu_sentence(h: dict) -> str:
    m = h["mfu_for_published"]
    if m == m and m <= 1.0:
        return (f"The model gives {PUBLISHED}x at this micro-batch if the non-MoE part runs at {m:.0%} MFU "
                "(column mfu_for_published).")
    return (f"No MFU up to 100% gives {PUBLISHED}x at this micro-batch (the MoE share of the step is too "
            "small); smaller micro-batches make the MoE share, and the speedup, larger (see the table).")


def run(opts: Options):
    tokens = (HEADLINE_TOKENS,) if opts.quick else TOKENS
    pts = [{"tokens": t, "system": s, "pass": p, "seed": opts.seed, "engine": opts.engine}
           for t in tokens for s in SYSTEMS for p in ("fwd", "bwd")]
    layer = sweep(_point, pts, opts, NAME)
    rows = [throughput(layer, t, mfu) for t in tokens for mfu in MFUS]
    write_csv(opts.out / f"{NAME}.csv", rows)

    fig, ax = new_figure(2)
    head_rows = [r for r in rows if r["mfu"] == HEADLINE_MFU]
    x = range(len(head_rows))
    for i, s in enumerate(SYSTEMS):
        nm = [r["non_moe_ms"] for r in head_rows]
        moe = [r[f"{s}_moe_total_ms"] for r in head_rows]
        pos = [k + (i - 0.5) * 0.38 for k in x]
        ax[0, 0].bar(pos, nm, 0.36, color="lightgrey", label="non-MoE (at MFU 40%)" if i == 0 else None)
        ax[0, 0].bar(pos, moe, 0.36, bottom=nm, color="tab:red" if s == "mok" else "tab:blue",
                     label=f"{s}: {load_model(MODEL).moe_layers} MoE layers fwd+bwd")
    ax[0, 0].set_xticks(list(x), [f"{r['tokens']} tok/GPU" for r in head_rows])
    ax[0, 0].set(ylabel="time per micro-batch per GPU (ms)", title="Where a training step goes (per GPU)")
    ax[0, 0].legend(fontsize=7)
    for t in tokens:
        sel = [r for r in rows if r["tokens"] == t]
        ax[0, 1].plot([r["mfu"] * 100 for r in sel], [r["speedup"] for r in sel], "-o", label=f"{t} tok/GPU")
    ax[0, 1].axhline(PUBLISHED, color="black", ls="--", lw=1, label=f"published {PUBLISHED}x (measured)")
    ax[0, 1].set(xlabel="assumed MFU of the non-MoE part (%)", ylabel="MoK / DeepEP tokens/s/GPU",
                 title="End-to-end speedup vs the non-MoE assumption")
    ax[0, 1].legend(fontsize=7)
    save_figure(fig, opts.out / f"{NAME}.png")

    h = next(r for r in rows if r["tokens"] == HEADLINE_TOKENS and r["mfu"] == HEADLINE_MFU)
    head = {"speedup at 4096 tok/GPU, MFU 40%": f"{h['speedup']:.2f}x (published {PUBLISHED}x)",
            "tokens/s/GPU (MoK, DeepEP)":
                f"{h['mok_tokens_per_s_per_gpu']:.0f}, {h['deepep_tokens_per_s_per_gpu']:.0f}"}
    fl = non_moe_flops_per_token(load_model(MODEL))
    _, pnote = params_for(HARDWARE)
    sections = [
        ("Setup", f"""
{GPUS} {HARDWARE} GPUs: {GPUS // EP} EP groups of {EP}, each inside one NVL72 rack (two groups per
rack, so 8 racks with 8 GPUs per rack idle or used elsewhere: assumption), {MODEL} ({load_model(MODEL).moe_layers}
MoE layers of {load_model(MODEL).layers}), {PRECISION.upper()} routed experts, BF16 shared expert, uniform
seeded routing.
Per GPU and micro-batch: {', '.join(map(str, tokens))} tokens. MoE layer forward and backward latency from the model
(MoK knobs tuned; DeepEP = the `deepep` baseline: DeepEP dispatch/combine + PyTorch grouped GEMMs).
"""),
        ("Headline", f"""
At {HEADLINE_TOKENS} tokens per GPU and {HEADLINE_MFU:.0%} MFU for the non-MoE part: MoK
**{h['mok_tokens_per_s_per_gpu']:.0f}** vs DeepEP **{h['deepep_tokens_per_s_per_gpu']:.0f}** tokens/s/GPU,
**{h['speedup']:.2f}x** (published, *measured*: {PUBLISHED}x). """ + _mfu_sentence(h) + "\n"),
        ("Results", md_table(rows, ["tokens", "mfu", "non_moe_ms", "mok_moe_fwd_ms", "mok_moe_bwd_ms",
                                    "deepep_moe_fwd_ms",
                                    "deepep_moe_bwd_ms", "mok_tokens_per_s_per_gpu", "deepep_tokens_per_s_per_gpu",
                                    "speedup", "mfu_for_published"])),
        ("Assumptions behind the numbers", """
- Non-MoE training FLOPs per token (3 x forward), in GFLOP: """ + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in fl.items())
         + f""". From Kimi K2's public config as we know it (MLA with {ATTN['heads']} heads, q_lora {ATTN['q_lora']},
  kv_lora {ATTN['kv_lora']}, qk {ATTN['qk_nope']}+{ATTN['qk_rope']}, v {ATTN['v_head']}; vocab {VOCAB:,}; one
  dense layer
  with FFN width {DENSE_FFN:,}); sequence length {SEQ} with causal attention (mean context S/2). Not in our
  facts file: assumptions.
- That part runs in BF16 at an MFU of {', '.join(f'{m:.0%}' for m in MFUS)} (assumed; not measured) of
  {load_hardware(HARDWARE).bf16_tflops:.0f} TFLOP/s.
- Ideal parallelism: no pipeline bubble; data-parallel gradient reduction, optimizer, embedding and
  loss are hidden or excluded; the same non-MoE time for both systems.
- MoE layer latency: the model's single-layer prediction times {load_model(MODEL).moe_layers}; layers are
  independent.
- {pnote}.
"""),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, f"{NAME}.png")
    return outputs(opts, NAME, rows, head)
