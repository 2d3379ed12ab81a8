# lit configuration for weft: FileCheck suites for dialects, passes and the
# ONNX frontend, plus end-to-end and conformance drivers (.test files).
import os
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

config.substitutions.append(("%pyref", config.python_ref))
config.substitutions.append(("%weft_src", config.weft_src_root))
config.substitutions.append(
    ("%expect_exit", "bash " + os.path.join(config.weft_src_root, "test", "tools", "expect-exit")))
config.substitutions.append(("%testtools", os.path.join(config.weft_src_root, "test", "tools")))
