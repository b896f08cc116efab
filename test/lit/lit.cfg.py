# lit configuration for ccsynth's dialect, pass, exporter and CLI tests.
import os

import lit.formats

config.name = "ccsynth"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ccsynth_obj_root, "test", "lit")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

# Our tools first, then LLVM 19's FileCheck/not/count (llvm-14 is also
# installed on these machines).
config.environment["PATH"] = os.pathsep.join(
    [config.ccsynth_tools_dir, config.ccsynth_cli_dir, config.llvm_tools_dir,
     config.environment.get("PATH", "")])
config.substitutions.append(
    ("%inputs", os.path.join(config.ccsynth_src_root, "test", "inputs")))
config.substitutions.append(("%srcroot", config.ccsynth_src_root))
