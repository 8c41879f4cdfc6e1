"""The shipped h200-1 model (analytic) against session 55's pass timings of s54_mb_gemm.py (one
H200, EP 8 x 4,096, uniform, pull / push, 32 comm SMs, capacity 1.0, group_m of the shape),
by minibatch and work-list lag. The model saw none of these runs; it was not registered first.

    PYTHONPATH=. python mok_kernels/logs_s55/mb_pass_model.py mok_kernels/logs_s55/mb_gemm_h200.txt
"""
import json
import subprocess
import sys


def predicted(model, mb, lag):
    out = subprocess.run([".venv/bin/mok", "predict", "--hardware", "h200-1", "--model", model, "--ep", "8",
                          "--tokens", "4096", "--dispatch", "pull", "--combine", "push", "--minibatch",
                          str(mb), "--comm-sms", "32", "--capacity", "1.0", "--macrobatch", "131072",
                          "--list-lag", str(lag), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["latency_ms"]


def main(path):
    print("| workload | lag | minibatch | measured ms | predicted ms | error |")
    print("|---|---:|---:|---:|---:|---:|")
    for line in open(path):
        f = [x.strip() for x in line.split("|")[1:-1]]
        if len(f) != 8 or not f[2].isdigit():
            continue
        model, lag, mb, meas = f[0], int(f[2]), int(f[3]), float(f[6])
        p = predicted(model, mb, lag)
        print(f"| {model.split('/')[-1]} | {lag} | {mb} | {meas:.3f} | {p:.3f} | {p / meas - 1:+.1%} |")


if __name__ == "__main__":
    main(sys.argv[1])
