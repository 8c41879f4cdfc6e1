"""The MoK forward on Gluon (Triton's explicit sm_90 frontend): core.py, the GEMM core's building
blocks (FP8 with block scales, and BF16); mok.py, the whole MoK pass of one emulated rank as one
persistent kernel: GluonFP8MoK, which MoKLayer runs as KernelConfig(precision="fp8",
fp8_kernel="gluon"), and GluonBF16MoK, the same pass with BF16 operands (session 60; correct but
0.61-0.87x the Triton BF16 megakernel on one H100, session 61, so not in MoKLayer:
benchmarks/gluon_fp8_mok.py --precision bf16 checks and times it)."""
