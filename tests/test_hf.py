"""MoKSparseMoE against the Hugging Face blocks it replaces (CPU; skipped without transformers).

For each block class the installed transformers has (Qwen3-MoE, Mixtral, DeepSeek-V3): a tiny
random block (seeded), the MoK module's outputs and gradients (tokens, router, every expert
weight) against the block's own, and a few SGD steps of a tiny causal LM whose MoE blocks were
replaced, against the same model unchanged (loss curves, router logits / aux loss)."""

from __future__ import annotations

import copy
import importlib

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install 'mok[hf]'): the Hugging Face "
                           "block tests need it")

from mok_kernels.hf import MoKSparseMoE, block_weights, replace_moe_blocks, restore_moe_blocks  # noqa: E402

V5 = int(transformers.__version__.split(".")[0]) >= 5
FAMILIES = ["qwen3_moe", "qwen3_moe_norm", "mixtral", "deepseek_v3"]
TINY = dict(vocab_size=96, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, initializer_range=0.1)


def load(fam: str):
    """(block class, causal-LM class, tiny config) of a family; skips when this transformers
    lacks it."""
    mod, block, lm, cfg_name = {
        "qwen3_moe": ("qwen3_moe", "Qwen3MoeSparseMoeBlock", "Qwen3MoeForCausalLM", "Qwen3MoeConfig"),
        "mixtral": ("mixtral", "MixtralSparseMoeBlock", "MixtralForCausalLM", "MixtralConfig"),
        "deepseek_v3": ("deepseek_v3", "DeepseekV3MoE", "DeepseekV3ForCausalLM", "DeepseekV3Config"),
    }[fam.removesuffix("_norm")]
    try:
        m = importlib.import_module(f"transformers.models.{mod}.modeling_{mod}")
        block_cls, lm_cls = getattr(m, block), getattr(m, lm)
        cfg_cls = getattr(transformers, cfg_name)
    except (ImportError, AttributeError):
        pytest.skip(f"transformers {transformers.__version__} has no {block}")
    if fam.startswith("qwen3_moe"):
        cfg = cfg_cls(**TINY, intermediate_size=96, moe_intermediate_size=32, num_key_value_heads=2,
                      head_dim=16, num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1,
                      mlp_only_layers=[], norm_topk_prob=fam.endswith("_norm"), router_aux_loss_coef=0.05)
    elif fam == "mixtral":
        cfg = cfg_cls(**TINY, intermediate_size=32, num_key_value_heads=2, num_local_experts=8,
                      num_experts_per_tok=2, router_jitter_noise=0.0, router_aux_loss_coef=0.05)
    else:
        cfg = cfg_cls(**TINY, intermediate_size=96, moe_intermediate_size=32, num_key_value_heads=4,
                      n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, n_group=4,
                      topk_group=2, first_k_dense_replace=0, q_lora_rank=None, kv_lora_rank=16,
                      qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, routed_scaling_factor=2.5)
    return block_cls, lm_cls, cfg


def tiny_block(fam: str, seed: int = 0) -> torch.nn.Module:
    """A block with seeded random weights (std 1/sqrt(fan_in)) and, for DeepSeek-V3, a random
    expert score correction bias (so it changes the choice)."""
    block_cls, _, cfg = load(fam)
    block = block_cls(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
        for b in block.buffers():
            b.copy_(torch.randn(b.shape, generator=g) * 0.1)
    return block


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("fam", FAMILIES)
def test_block_outputs_and_gradients_match(fam, dtype, tol):
    block = tiny_block(fam).to(dtype)
    mok = MoKSparseMoE(copy.deepcopy(block), backend="torch")   # its own router copy: own grads
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 7, 64, generator=g).to(dtype)
    cot = torch.randn(3, 7, 64, generator=g)
    outs, xgrads = [], []
    for mod in (block, mok):
        xs = x.clone().requires_grad_()
        out = mod(xs)
        (first(out).float() * cot).sum().backward()
        outs.append(out)
        xgrads.append(xs.grad)
    assert type(outs[0]) is type(outs[1])              # 4.x Qwen3/Mixtral: (hidden, router_logits)
    assert first(outs[1]).dtype == dtype and first(outs[1]).shape == x.shape
    assert rel(first(outs[1]), first(outs[0])) <= tol
    if isinstance(outs[0], tuple):
        assert torch.equal(outs[1][1], outs[0][1])     # the same router on the same tokens
    assert rel(xgrads[1], xgrads[0]) <= tol
    assert rel(mok.gate.weight.grad, block.gate.weight.grad) <= tol
    want = block_weights(block, grad=True)
    for name in ("wg", "wu", "wd", "sg", "su", "sd"):
        ours, theirs = getattr(mok, name), getattr(want, name)
        assert (ours is None) == (theirs is None) == (fam != "deepseek_v3" and name[0] == "s")
        if ours is not None:
            assert ours.grad.dtype == dtype
            assert rel(ours.grad, theirs) <= tol, name


def test_mixtral_router_jitter_in_training():
    block = tiny_block("mixtral")
    block.jitter_noise = 0.2
    mok = MoKSparseMoE(copy.deepcopy(block), backend="torch")
    assert mok.jitter_noise == 0.2
    x = torch.randn(2, 5, 64)
    outs = []
    for mod in (block, mok):
        mod.train()
        torch.manual_seed(3)
        outs.append(first(mod(x.clone())))
    assert rel(outs[1], outs[0]) <= 1e-5
    mok.eval()
    assert rel(first(mok(x)), first(block.eval()(x))) <= 1e-5


def test_unsupported_blocks_are_refused():
    with pytest.raises(ValueError, match="not a supported MoE block"):
        MoKSparseMoE(torch.nn.Linear(4, 4))
    try:
        from transformers import Qwen2MoeConfig
        from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock
    except ImportError:
        return
    cfg = Qwen2MoeConfig(hidden_size=32, moe_intermediate_size=16, shared_expert_intermediate_size=16,
                         num_experts=4, num_experts_per_tok=2)
    with pytest.raises(ValueError, match="sigmoid gate"):
        MoKSparseMoE(Qwen2MoeSparseMoeBlock(cfg))
    assert replace_moe_blocks(torch.nn.Sequential(Qwen2MoeSparseMoeBlock(cfg))) == 0


@pytest.mark.parametrize("fam", ["qwen3_moe_norm", "mixtral", "deepseek_v3"])
def test_training_loss_curve_matches_original(fam):
    """5 SGD steps of a 2-layer causal LM (router aux loss on where the model has one), MoK
    blocks vs the original blocks; then restore_moe_blocks gives a model transformers can save."""
    _, lm_cls, cfg = load(fam)
    torch.manual_seed(0)
    original = lm_cls(cfg).float()
    replaced = copy.deepcopy(original)
    assert replace_moe_blocks(replaced) == cfg.num_hidden_layers
    assert replace_moe_blocks(replaced) == 0           # nothing left to replace
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, cfg.vocab_size, (2, 12), generator=g)    # one batch, learnt by heart
    aux = fam != "deepseek_v3"
    curves = []
    for model in (original, replaced):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        losses, aux_losses = [], []
        for _ in range(5):
            out = model(input_ids=ids, labels=ids, **({"output_router_logits": True} if aux else {}))
            if aux:
                assert out.aux_loss is not None and len(out.router_logits) == cfg.num_hidden_layers
                aux_losses.append(float(out.aux_loss))
            opt.zero_grad()
            out.loss.backward()
            opt.step()
            losses.append(float(out.loss))
        curves.append((losses, aux_losses))
    (got, got_aux), (want, want_aux) = curves[1], curves[0]
    assert max(abs(a - b) / b for a, b in zip(got + got_aux, want + want_aux)) <= 1e-4, curves
    assert want[-1] < 0.9 * want[0]                    # it learns
    with torch.no_grad():
        want = replaced(input_ids=ids, labels=ids).loss
        assert restore_moe_blocks(replaced) == cfg.num_hidden_layers
        assert not any(isinstance(m, MoKSparseMoE) for m in replaced.modules())
        assert replaced.state_dict().keys() == original.state_dict().keys()
        assert abs(float(replaced(input_ids=ids, labels=ids).loss) - float(want)) <= 1e-5 * float(want)


def test_restore_after_a_cast_keeps_the_modules_dtype():
    block = tiny_block("deepseek_v3")
    seq = torch.nn.Sequential(copy.deepcopy(block))
    assert replace_moe_blocks(seq, backend="torch") == 1
    seq = seq.to(torch.bfloat16)
    x = torch.randn(2, 3, 64).to(torch.bfloat16)
    want = first(seq(x))
    assert restore_moe_blocks(seq) == 1
    assert type(seq[0]) is type(block)
    assert all(p.dtype == torch.bfloat16 for p in seq[0].parameters())
    assert rel(first(seq(x)), want) <= 2e-2
