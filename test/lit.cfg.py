# lit configuration for weft: FileCheck suites for dialects, passes and the
# ONNX frontend, plus end-to-end and conformance drivers (.test files).
import os
import shutil
import subprocess

import lit.formats

config.name = "weft"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_obj_root, "test")
config.excludes = ["unit", "lit.cfg.py", "CMakeLists.txt", "inputs", "Inputs", "tools"]

config.environment["PATH"] = os.pathsep.join(
    [config.weft_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["WEFT_NUM_THREADS"] = "2"
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
# Bundles linked with another runtime or driver (tools/BundleLink.h).
for var in ("WEFT_RUNTIME_LIB_DIR", "WEFT_CXX"):
    if os.environ.get(var):
        config.environment[var] = os.environ[var]

config.substitutions.append(("%pyref", config.python_ref))
config.substitutions.append(("%weft_src", config.weft_src_root))
config.substitutions.append(
    ("%expect_exit", "bash " + os.path.join(config.weft_src_root, "test", "tools", "expect-exit")))
config.substitutions.append(("%testtools", os.path.join(config.weft_src_root, "test", "tools")))

# cuda-build: weft has its CUDA runtime (WEFT_ENABLE_CUDA; weftc compile
# --target cuda links). cuda-device: nvidia-smi lists a GPU here, so cuda
# bundles run (GPU tests say REQUIRES: cuda-build, cuda-device; tests of the
# no-GPU behaviour UNSUPPORTED: cuda-device).
if getattr(config, "weft_enable_cuda", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cuda-build")
smi = shutil.which("nvidia-smi")
if smi:
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True,
                                timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    if any(line.startswith("GPU ") for line in listed.splitlines()):
        config.available_features.add("cuda-device")

# onnxruntime: node can load onnxruntime-node from bench/node_modules (where
# bench/run_inference_bench.py and test/ort/cross_check.py install it with
# `npm install --ignore-scripts onnxruntime-node`); the cross-check against
# onnxruntime says REQUIRES: onnxruntime.
node = shutil.which("node")
if node:
    ort = os.path.join(config.weft_src_root, "bench", "node_modules", "onnxruntime-node")
    try:
        loads = subprocess.run([node, "-e", "require(%r)" % ort], capture_output=True,
                               timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        loads = False
    if loads:
        config.available_features.add("onnxruntime")
