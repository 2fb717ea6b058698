#!/usr/bin/env python3
# Issue 36: does an idle torch process (OpenMP workers after parallel matmuls) burn CPU?
# Prints the CPU seconds the whole process used while idle. Run under the serve venv:
#   $EDGEPLAN_SERVE_VENV/bin/python scripts/idle-torch-cpu.py 5
import os, sys, time, torch
torch.set_num_threads(2)
a = torch.randn(2048, 2048, dtype=torch.bfloat16); b = torch.randn(2048, 2048, dtype=torch.bfloat16)
for _ in range(20): (a @ b)
print("parallel-config:", torch.__config__.parallel_info().splitlines()[:6], flush=True)
def cpu():
    t = os.times(); return t.user + t.system
c0 = cpu(); time.sleep(float(sys.argv[1])); c1 = cpu()
print(f"idle {sys.argv[1]} s after parallel matmuls: {c1-c0:.3f} s of CPU", flush=True)
# and immediately after a matmul: the first 0.2 s
(a @ b); c0 = cpu(); time.sleep(0.2); print(f"first 0.2 s after a matmul: {cpu()-c0:.3f} s CPU", flush=True)
