"""Session 76: random predict / tune / simulate command lines (every hardware and model preset,
EP and token counts valid and not, knobs, routings, passes, precisions) run in-process: a
traceback, an exit code other than 0 or 2, or an error of more than three lines counts as bad.

    PYTHONPATH=. python mok_kernels/logs_s76/fuzz_cli.py SEED COUNT
"""
import contextlib
import io
import random
import sys
import time
import traceback

from mok_model import cli

HW = ["h100-hgx8", "h200-hgx8", "h200-1", "h100-1", "b200-hgx8", "b300-dgx8", "gb200-nvl72",
      "gb300-nvl72", "vr-nvl72", "rubin-ultra-nvl576"]
MODELS = ["deepseek-v3", "kimi-k2", "glm-4.5", "glm-5", "qwen3-235b-a22b", "qwen3-30b-a3b",
          "qwen3-next-80b-a3b", "gpt-oss-120b", "mixtral-8x7b", "llama4-maverick", "minimax-m2"]


def command(rng: random.Random) -> list[str]:
    cmd = rng.choice(["predict", "predict", "tune", "simulate"])
    ep = rng.choice([1, 2, 4, 8, 16, 32, 64, 72, 3, 6, 12, 0, -1])
    if cmd == "simulate" and abs(ep) > 16:
        ep = 8
    a = [cmd, "--hardware", rng.choice(HW), "--model", rng.choice(MODELS), "--ep", str(ep),
         "--tokens", str(rng.choice([1, 7, 64, 128, 500, 1024, 4096, 8192, 16384, 0]))]
    if rng.random() < 0.3:
        a += ["--pass", rng.choice(["fwd", "bwd"])]
    if rng.random() < 0.3:
        a += ["--precision", rng.choice(["bf16", "fp8", "mxfp8"])]
    if rng.random() < 0.4:
        a += ["--routing", rng.choice(["uniform", "zipf:1.2", "hot:0.3", "zipf:0", "hot:1.5"])]
    if cmd != "tune" and rng.random() < 0.7:
        a += ["--dispatch", rng.choice(["pull", "push"]), "--combine", rng.choice(["pull", "push"]),
              "--minibatch", str(rng.choice([128, 512, 1024, 4096, 8192, 100])),
              "--comm-sms", str(rng.choice([1, 8, 16, 32, 64, 100, 132]))]
    if rng.random() < 0.2:
        a += ["--json"]
    return a


def main(seed: int, count: int) -> int:
    rng, bad, t0 = random.Random(seed), 0, time.time()
    for _ in range(count):
        a = command(rng)
        out, err, code = io.StringIO(), io.StringIO(), 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                cli.main(a)
        except SystemExit as e:
            code = e.code
        except Exception:
            bad += 1
            print("TRACEBACK:", " ".join(a), traceback.format_exc()[-800:])
            continue
        e = err.getvalue().strip()
        if code not in (0, None, 2):
            bad += 1
            print("CODE", code, " ".join(a), e[-300:])
        elif code == 2 and ("Traceback" in e or len([ln for ln in e.splitlines() if ln.strip()]) > 3):
            bad += 1
            print("LONG ERROR", " ".join(a), e[-500:])
    print(f"done {count} in {time.time() - t0:.0f}s, bad {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
