"""The FP8 forward on Gluon (Triton's explicit sm_90 frontend): core.py, the GEMM core's building
blocks; mok.py, the whole MoK pass of one emulated rank as one persistent kernel (GluonFP8MoK),
which MoKLayer runs as KernelConfig(precision="fp8", fp8_kernel="gluon")."""
