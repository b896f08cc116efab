/*===- ccsynth_plugin.h - The public C ABI of ccsynth algorithm plugins ---===*
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * A plugin is a shared library built by `ccsynth compile --target plugin`.
 * It exports one symbol, `ccsynthPluginGet`, returning a table of the
 * algorithms it holds. This is the only header an application (or the
 * NCCL-API interposer) needs to load and launch them. Plain C, no
 * dependency on LLVM, MLIR, Z3 or CUDA.
 *
 * Versioning: `abi_version` changes whenever any struct or the meaning of a
 * field changes; loaders refuse other versions. Structs carry their size so
 * a loader can check it reads what it expects.
 *===----------------------------------------------------------------------===*/
#ifndef CCSYNTH_RUNTIME_CCSYNTH_PLUGIN_H
#define CCSYNTH_RUNTIME_CCSYNTH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: host transports share one address-free communicator layout
 *    (HostWorld.h); the host-shm transport (ranks as processes).
 * 3: ccsynthAlgorithm.reads_peer_inputs. */
#define CCSYNTH_PLUGIN_ABI_VERSION 3
#define CCSYNTH_PLUGIN_ENTRY "ccsynthPluginGet"

/* Element types, numbered as NCCL's ncclDataType_t. */
typedef enum {
  ccsynthInt8 = 0,
  ccsynthUint8 = 1,
  ccsynthInt32 = 2,
  ccsynthUint32 = 3,
  ccsynthInt64 = 4,
  ccsynthUint64 = 5,
  ccsynthFloat16 = 6,
  ccsynthFloat32 = 7,
  ccsynthFloat64 = 8,
  ccsynthBfloat16 = 9,
  ccsynthNumTypes = 10
} ccsynthDataType;

/* Reduction operators, numbered as NCCL's ncclRedOp_t. */
typedef enum {
  ccsynthSum = 0,
  ccsynthProd = 1,
  ccsynthMax = 2,
  ccsynthMin = 3,
  ccsynthNumOps = 4
} ccsynthRedOp;

typedef enum {
  ccsynthSuccess = 0,
  ccsynthInvalidArgument = 1, /* refused before anything ran */
  ccsynthUnsupported = 2,     /* dtype/op/transport not built in */
  ccsynthTimeout = 3,         /* a wait passed its deadline; see error */
  ccsynthAborted = 4,         /* another rank or threadblock failed */
  ccsynthSystemError = 5      /* threads, memory, CUDA */
} ccsynthResult;

typedef enum {
  ccsynthBackendHost = 1, /* threads as threadblocks, host memory */
  ccsynthBackendCuda = 2
} ccsynthBackend;

/* Transports a launch may use (bit mask in the descriptor). */
typedef enum {
  ccsynthTransportHostThreads = 1, /* ranks as threads of one process */
  ccsynthTransportHostShm = 2,     /* ranks as processes, shared memory */
  ccsynthTransportCudaVirtual =
      4,                          /* all ranks in one launch (one GPU or P2P) */
  ccsynthTransportNcclDevice = 8, /* NCCL 2.28 device API: LSA + GIN */
  ccsynthTransportCudaIpc = 16    /* one process per rank, peers' windows
                                     mapped with CUDA IPC (one node) */
} ccsynthTransportKind;

/* What a failed launch reports: the first wait that timed out (or the
 * first refused argument), in words and as fields. */
typedef struct {
  int32_t result; /* ccsynthResult */
  int32_t rank;   /* -1 when not tied to a rank */
  int32_t threadblock;
  int32_t step;
  char message[512];
} ccsynthError;

/* One launch of one rank's part of an algorithm. `count` follows NCCL's
 * convention for the collective (allgather: elements sent per rank;
 * reducescatter: elements received per rank; alltoall: elements per peer;
 * others: elements of the buffer). */
typedef struct {
  uint32_t struct_size; /* sizeof(ccsynthLaunchArgs) */
  int32_t rank;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  int32_t dtype; /* ccsynthDataType */
  int32_t op;    /* ccsynthRedOp; ignored when the algorithm does not reduce */
  void *scratch; /* at least `scratch_bytes` of the descriptor, 16-aligned */
  uint64_t scratch_bytes;
  int32_t transport;      /* ccsynthTransportKind */
  void *comm;             /* the transport's communicator: host transports
                             take the CommHeader of HostWorld.h (threads:
                             HostWorld::comm(); shm: the window's start,
                             and every buffer must lie in that window) */
  void *stream;           /* cudaStream_t for CUDA; unused on the host */
  double timeout_seconds; /* per wait; <= 0 or NaN selects the default
                             (30 s), more than a year is a year */
  ccsynthError *error;    /* optional: filled on failure */
} ccsynthLaunchArgs;

/* One algorithm of a plugin. */
typedef struct {
  uint32_t struct_size; /* sizeof(ccsynthAlgorithm) */
  const char *name;
  const char *collective; /* allgather, reducescatter, allreduce, broadcast,
                             reduce, gather, scatter, alltoall, or a custom
                             collective's name */
  int32_t ranks;
  int32_t root;            /* rooted collectives */
  int32_t inplace;         /* 1: in-place only, 0: out-of-place only */
  uint64_t min_bytes;      /* size range the algorithm is meant for (bytes of */
  uint64_t max_bytes;      /* the larger buffer, as MSCCL); 0 = unbounded */
  uint32_t dtype_mask;     /* bit (1 << ccsynthDataType) per dtype built in */
  uint32_t op_mask;        /* bit (1 << ccsynthRedOp) per op; 0: no reduction */
  uint64_t scratch_bytes;  /* per rank, for any count */
  uint64_t count_multiple; /* count must be a multiple of this (custom) */
  int32_t backend;         /* ccsynthBackend */
  uint32_t transport_mask; /* ccsynthTransportKind bits */
  int32_t capture_safe;    /* may be launched under CUDA graph capture */
  int32_t threadblocks;    /* most threadblocks of one rank */
  int32_t steps;           /* most steps of one threadblock */
  uint32_t flag_words;     /* 64-bit flag words a rank's transport needs */
  int32_t reads_peer_inputs; /* 1: switch operations read every rank's
                                input at one address, so every rank's
                                sendbuff must lie at the same offset of the
                                transport's shared window */
  const char *ir_hash;     /* hash of the IR the code came from */
  ccsynthResult (*launch)(const ccsynthLaunchArgs *args);
} ccsynthAlgorithm;

typedef struct {
  uint32_t abi_version;  /* CCSYNTH_PLUGIN_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(ccsynthPlugin) */
  const char *generator; /* "ccsynth <version>" */
  int32_t num_algorithms;
  const ccsynthAlgorithm *algorithms;
} ccsynthPlugin;

typedef const ccsynthPlugin *(*ccsynthPluginGetFn)(void);

/* Optional, CUDA-backend plugins only: the communicators of the CUDA
 * transports behind plain C pointers, so that a loader that links no CUDA
 * library (`ccsynth run --backend cuda`, the NCCL-API interposer) can
 * create the `comm` of a launch. Exported as its own symbol with its own
 * version, so plugins built before it still load (they only lack this
 * entry); loaders read version 1 (the virtual-ranks entries only) and 2.
 *
 * virtual_comm_create: makes `device` current on the calling thread and
 *   creates a comm for `ranks` ranks (all blocks of one launch) and
 *   algorithms needing at most `flag_words` flag words per rank.
 * virtual_comm_error: after the launch's stream is idle, ccsynthSuccess or
 *   the first failed wait (ccsynthTimeout with rank, threadblock and step
 *   in `error`); ccsynthInvalidArgument for a comm it did not create.
 * virtual_comm_destroy: frees the comm; its launches must have finished.
 *
 * Version 2, the CUDA IPC transport (ccsynthTransportCudaIpc: one process
 * per rank, on one or several GPUs of a node):
 * ipc_comm_create: makes `device` current and allocates this rank's window
 *   (flags, then `data_bytes` for receive buffers and scratch) in device
 *   memory; writes its CCSYNTH_IPC_HANDLE_BYTES-byte IPC handle to
 *   `handle` for the caller to hand to every other rank.
 * ipc_comm_connect: opens the other ranks' handles (`handles`: every
 *   rank's, in rank order) and maps their windows. Collective in effect:
 *   launches need every rank connected.
 * ipc_comm_window: this rank's data area (where recvbuff and scratch of
 *   a launch must lie, at the same offsets on every rank).
 * ipc_comm_error: ccsynthSuccess or the first failed wait this rank saw;
 *   readable at any time (the record is host-mapped), final once the
 *   launches' streams are idle.
 * ipc_comm_abort: raises the comm's abort word: waiting kernels of this
 *   rank end within a poll and report the abort.
 * ipc_comm_destroy: waits for the comm's last launch (its waits are
 *   bounded by their timeout), unmaps the peers, frees the window. */
#define CCSYNTH_CUDA_COMMS_VERSION 2
#define CCSYNTH_CUDA_COMMS_ENTRY "ccsynthPluginCudaComms"
#define CCSYNTH_IPC_HANDLE_BYTES 64

typedef struct {
  uint32_t version;     /* CCSYNTH_CUDA_COMMS_VERSION */
  uint32_t struct_size; /* sizeof(ccsynthCudaComms) (version 1: up to and
                           including virtual_comm_destroy) */
  ccsynthResult (*virtual_comm_create)(int32_t device, int32_t ranks,
                                       uint32_t flag_words, void **comm,
                                       ccsynthError *error);
  ccsynthResult (*virtual_comm_error)(void *comm, ccsynthError *error);
  void (*virtual_comm_destroy)(void *comm);
  /* version 2 */
  ccsynthResult (*ipc_comm_create)(int32_t device, int32_t rank, int32_t ranks,
                                   uint32_t flag_words, uint64_t data_bytes,
                                   void **comm, void *handle,
                                   ccsynthError *error);
  ccsynthResult (*ipc_comm_connect)(void *comm, const void *handles,
                                    ccsynthError *error);
  ccsynthResult (*ipc_comm_window)(void *comm, void **data,
                                   uint64_t *data_bytes);
  ccsynthResult (*ipc_comm_error)(void *comm, ccsynthError *error);
  ccsynthResult (*ipc_comm_abort)(void *comm);
  void (*ipc_comm_destroy)(void *comm);
} ccsynthCudaComms;

/* Size of a version-1 table. */
#define CCSYNTH_CUDA_COMMS_V1_SIZE                                             \
  (offsetof(ccsynthCudaComms, virtual_comm_destroy) + sizeof(void (*)(void *)))

typedef const ccsynthCudaComms *(*ccsynthCudaCommsGetFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* CCSYNTH_RUNTIME_CCSYNTH_PLUGIN_H */
