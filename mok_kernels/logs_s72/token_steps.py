"""Session 72: where a prediction falls as tokens grow. Every model preset x EP {4, 8, 16, 32} x
19 token counts (16-8,192), uniform routing, the published default knobs (pull / push, 4,096
rows, 32 comm SMs), analytic; counts the steps to the next token count that read more than 1 %
faster and lists the largest (the parameters of the checkout it runs in).

    PYTHONPATH=. python mok_kernels/logs_s72/token_steps.py HARDWARE
"""
import sys

from mok_model.errors import MokInputError
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model, model_names
from mok_model.scenario import Config, Scenario

TOKENS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
          6144, 8192)
DEFAULT = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=32)

hw = load_hardware(sys.argv[1])
drops, steps = [], 0
for name in model_names():
    model = load_model(name)
    for ep in (4, 8, 16, 32):
        prev = None
        for n in TOKENS:
            try:
                ms = predict(Scenario(hw, model, ep, n), DEFAULT).latency_ms
            except MokInputError:       # EP above the experts, or the shape refused
                prev = None
                continue
            if prev is not None:
                steps += 1
                if ms < 0.99 * prev[1]:
                    drops.append((100 * (1 - ms / prev[1]), name, ep, prev[0], n, prev[1], ms))
            prev = (n, ms)
worst = max((d[0] for d in drops), default=0.0)
print(f"{sys.argv[1]}: {steps} token steps, {len(drops)} read over 1 % faster (largest {worst:.1f} %)")
for pct, name, ep, a, b, ma, mb in sorted(drops, reverse=True)[:12]:
    print(f"  {name} EP {ep}: {a} -> {b} tokens {ma:.3f} -> {mb:.3f} ms (-{pct:.1f} %)")
