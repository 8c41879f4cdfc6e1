"""Session 58 audit: docs/knobs.md's 'within 3% of the best told each on 238 of 242 preset questions
(EP 8-32, 512 / 4,096 tokens; max 4.5%)' under hot:0.02 / 0.05 and zipf:0.8 / 1.0, and 'under uniform
the robust pick costs at most 2.2% by the model'. No command was
named; this reconstructs the question: h200-1's shipped parameters, every preset model, EP 8 / 16 / 32
(at most the routed experts), 512 / 4,096 tokens; the robust pick (mok_kernels.knobs.tuned_choice,
MoKLayer's question) predicted under each routing at its own lag, over the best the tuner finds told
that routing (tuned_choice(routing=R), capacity raised as a layer's); a routing under which the
pick's capacity overflows is dropped (printed).

    PYTHONPATH=. python mok_kernels/logs_s58/audit/robust_between.py MODEL[,MODEL...]
"""
import sys

from mok_kernels.knobs import tuned_choice
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

names = sys.argv[1].split(",")
hw = load_hardware("h200-1")
p = load_params(None, "h200-1")
rows = []
for m in names:
    model = load_model(m)
    for ep in (8, 16, 32):
        if ep > model.routed_experts:
            continue
        for tok in (512, 4096):
            try:
                rob = tuned_choice(hw, model, ep, tok, p)
            except MokInputError as e:
                print(m, ep, tok, "robust: no choice", e)
                continue
            cfg = Config(**rob.knobs)
            for r in ("uniform", "hot:0.02", "hot:0.05", "zipf:0.8", "zipf:1.0"):
                scn = Scenario(hw, model, ep, tok, "fwd", "bf16", routing=r, list_lag=rob.list_lag)
                try:
                    got = predict(scn, cfg, "mok", p).latency_ms
                    best = tuned_choice(hw, model, ep, tok, p, routing=r).predicted_ms
                except MokInputError as e:
                    print(m, ep, tok, r, "dropped:", str(e)[:80])
                    continue
                rows.append((m, ep, tok, r, got / best))
                print(f"{m} {ep} {tok} {r} robust {got:.4f} best {best:.4f} ratio {got / best:.4f}",
                      flush=True)
between = [x for x in rows if x[3] != "uniform"]
uniform = [x for x in rows if x[3] == "uniform"]
worst = max(between, key=lambda x: x[4])
print(f"between (hot:0.02 / 0.05, zipf:0.8 / 1.0): {sum(x[4] <= 1.03 for x in between)} of "
      f"{len(between)} within 3%, max {100 * (worst[4] - 1):.1f}% ({' '.join(map(str, worst[:4]))})")
worst = max(uniform, key=lambda x: x[4])
print(f"uniform: {sum(x[4] <= 1.03 for x in uniform)} of {len(uniform)} within 3%, max "
      f"{100 * (worst[4] - 1):.1f}% ({' '.join(map(str, worst[:4]))})")
