//===- PluginLoader.cpp - Opening plugin libraries and checking their ABI -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/PluginLoader.h"

#include <cstring>
#include <dlfcn.h>

namespace ccsynth::rt {

Plugin::~Plugin() {
  if (handle)
    ::dlclose(handle);
}

std::unique_ptr<Plugin> Plugin::open(const std::string &path,
                                     std::string &error) {
  std::unique_ptr<Plugin> p(new Plugin());
  p->file = path;
  // A bare name would be searched on the library path: say what we load.
  std::string name = path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  p->handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->handle) {
    const char *why = ::dlerror();
    error = "cannot load plugin '" + path + "': " + (why ? why : "unknown");
    return nullptr;
  }
  void *sym = ::dlsym(p->handle, CCSYNTH_PLUGIN_ENTRY);
  if (!sym) {
    error = "'" + path + "' is not a ccsynth plugin: it has no symbol " +
            CCSYNTH_PLUGIN_ENTRY;
    return nullptr;
  }
  auto get = reinterpret_cast<ccsynthPluginGetFn>(sym);
  const ccsynthPlugin *table = get();
  if (!table) {
    error =
        "plugin '" + path + "': " + CCSYNTH_PLUGIN_ENTRY + " returned no table";
    return nullptr;
  }
  if (table->abi_version != CCSYNTH_PLUGIN_ABI_VERSION) {
    error = "plugin '" + path + "' has ABI version " +
            std::to_string(table->abi_version) + "; this build reads " +
            std::to_string(CCSYNTH_PLUGIN_ABI_VERSION) +
            " (rebuild it with this ccsynth)";
    return nullptr;
  }
  if (table->struct_size != sizeof(ccsynthPlugin) ||
      table->num_algorithms < 0 ||
      (table->num_algorithms > 0 && !table->algorithms)) {
    error = "plugin '" + path + "' has a malformed table";
    return nullptr;
  }
  for (int i = 0; i < table->num_algorithms; ++i) {
    const ccsynthAlgorithm &a = table->algorithms[i];
    if (a.struct_size != sizeof(ccsynthAlgorithm) || !a.name || !a.collective ||
        !a.launch || a.ranks < 1 ||
        (a.backend != ccsynthBackendHost && a.backend != ccsynthBackendCuda)) {
      error = "plugin '" + path + "': algorithm " + std::to_string(i) +
              " has a malformed descriptor";
      return nullptr;
    }
  }
  p->plugin = table;
  // The optional CUDA entry: absent is fine, malformed is not.
  if (void *cuda = ::dlsym(p->handle, CCSYNTH_CUDA_COMMS_ENTRY)) {
    const ccsynthCudaComms *c = reinterpret_cast<ccsynthCudaCommsGetFn>(cuda)();
    bool v1 =
        c && c->version == 1 && c->struct_size == CCSYNTH_CUDA_COMMS_V1_SIZE;
    bool v2 = c && c->version == 2 &&
              c->struct_size == sizeof(ccsynthCudaComms) &&
              c->ipc_comm_create && c->ipc_comm_connect && c->ipc_comm_window &&
              c->ipc_comm_error && c->ipc_comm_abort && c->ipc_comm_destroy;
    if (!(v1 || v2) || !c->virtual_comm_create || !c->virtual_comm_error ||
        !c->virtual_comm_destroy) {
      error = "plugin '" + path + "': " + CCSYNTH_CUDA_COMMS_ENTRY +
              (c ? " has version " + std::to_string(c->version) +
                       " or a malformed table; this build reads versions 1 "
                       "and " +
                       std::to_string(CCSYNTH_CUDA_COMMS_VERSION) +
                       " (rebuild it with this ccsynth)"
                 : std::string(" returned no table"));
      return nullptr;
    }
    p->comms = c;
  }
  return p;
}

const ccsynthAlgorithm *Plugin::find(const std::string &name) const {
  for (const ccsynthAlgorithm &a : *this)
    if (name == a.name)
      return &a;
  return nullptr;
}

namespace {
struct Named {
  int value;
  const char *name;
  const char *aliases[4];
};
const Named kDtypes[] = {
    {ccsynthInt8, "int8", {"i8", "char", "ncclInt8", "ncclChar"}},
    {ccsynthUint8, "uint8", {"u8", "ncclUint8", nullptr, nullptr}},
    {ccsynthInt32, "int32", {"i32", "int", "ncclInt32", "ncclInt"}},
    {ccsynthUint32, "uint32", {"u32", "ncclUint32", nullptr, nullptr}},
    {ccsynthInt64, "int64", {"i64", "ncclInt64", nullptr, nullptr}},
    {ccsynthUint64, "uint64", {"u64", "ncclUint64", nullptr, nullptr}},
    {ccsynthFloat16, "fp16", {"float16", "half", "f16", "ncclFloat16"}},
    {ccsynthFloat32, "fp32", {"float32", "float", "f32", "ncclFloat32"}},
    {ccsynthFloat64, "fp64", {"float64", "double", "f64", "ncclFloat64"}},
    {ccsynthBfloat16, "bf16", {"bfloat16", "ncclBfloat16", nullptr, nullptr}},
};
const Named kOps[] = {
    {ccsynthSum, "sum", {"ncclSum", nullptr, nullptr, nullptr}},
    {ccsynthProd, "prod", {"ncclProd", nullptr, nullptr, nullptr}},
    {ccsynthMax, "max", {"ncclMax", nullptr, nullptr, nullptr}},
    {ccsynthMin, "min", {"ncclMin", nullptr, nullptr, nullptr}},
};

template <size_t N>
int parseNamed(const Named (&table)[N], const std::string &s) {
  for (const Named &n : table) {
    if (s == n.name)
      return n.value;
    for (const char *a : n.aliases)
      if (a && s == a)
        return n.value;
  }
  return -1;
}
template <size_t N> const char *nameOf(const Named (&table)[N], int v) {
  for (const Named &n : table)
    if (n.value == v)
      return n.name;
  return "unknown";
}
template <size_t N> std::string maskNames(const Named (&table)[N], unsigned m) {
  std::string out;
  for (const Named &n : table)
    if (m & (1u << n.value))
      out += (out.empty() ? "" : ",") + std::string(n.name);
  return out.empty() ? "-" : out;
}
} // namespace

const char *dtypeName(int dtype) { return nameOf(kDtypes, dtype); }
const char *opName(int op) { return nameOf(kOps, op); }
int parseDtype(const std::string &name) { return parseNamed(kDtypes, name); }
int parseOp(const std::string &name) { return parseNamed(kOps, name); }
std::string dtypeMaskNames(unsigned mask) { return maskNames(kDtypes, mask); }
std::string opMaskNames(unsigned mask) { return maskNames(kOps, mask); }

const char *backendName(int backend) {
  return backend == ccsynthBackendHost   ? "host"
         : backend == ccsynthBackendCuda ? "cuda"
                                         : "unknown";
}

std::string transportMaskNames(unsigned mask) {
  static const Named kTransports[] = {
      {0, "host-threads", {}}, {1, "host-shm", {}}, {2, "cuda-virtual", {}},
      {3, "nccl-device", {}},  {4, "cuda-ipc", {}},
  };
  return maskNames(kTransports, mask);
}

} // namespace ccsynth::rt
