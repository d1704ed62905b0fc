#pragma once
/// \file Exports of a plan and its timeline in formats other tools take: Chrome/Perfetto trace JSON,
/// Graphviz DOT coloured by device, per-operator CSV, an OpenVINO HETERO affinity map and an onert
/// OP_BACKEND_MAP line. Each writer returns the text; saveExport() writes any of them atomically.
/// Formats and device-name mappings are documented in docs/plan-format.md.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "plan/fusedkernels.h"
#include "platform/platform.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "support/result.h"

namespace partex {

// ---- Chrome / Perfetto trace ------------------------------------------------------------------

/// One timeline to put in a trace: it becomes one process named `label`.
struct TraceSource {
  std::string label;                 ///< Process name, e.g. the algorithm ("heft") or "measured".
  const CostTable* table = nullptr;  ///< Must outlive the call.
  const Timeline* timeline = nullptr;
  int pid = 0;  ///< Process id; 0: its position in the list + 1.
  /// The timeline's fused kernels (plan/fusedkernels.h; null or empty: none): each becomes one slice
  /// in place of its operators' slices.
  const std::vector<FusedKernel>* fused = nullptr;
};

/// Trace Event Format JSON ({"traceEvents": [...], "displayTimeUnit": "ms"}) for chrome://tracing,
/// Perfetto and speedscope: per process, one thread per device and one per link resource (plus one
/// per device pair for uncontended transfers that take time); every operator an "X" event
/// (cat "Node", args op_name, op_type, provider) and every transfer that takes time an "X" event
/// (cat "Transfer") on its link; one flow arrow ("s" at the producer's end, "f" with bp "e" at the
/// consumer's start) per edge between operators on different devices. Times in microseconds.
/// A fused kernel is one "X" event in place of its operators' (named after its anchor, from its first
/// operator's start to its last one's end, args op_type "Conv+BatchNormalization+Relu" and fused_ops,
/// the member names); flows still start and end at the members' own times, inside it.
/// Flow ids are unique across the whole file, so several plans can be compared in one trace.
std::string traceJson(const std::vector<TraceSource>& sources);
/// One timeline as one process.
std::string traceJson(const CostTable& t, const Timeline& tl, const std::string& label, int pid = 1,
                      const std::vector<FusedKernel>* fused = nullptr);

// ---- Graphviz DOT -----------------------------------------------------------------------------

/// The fixed colour-blind-safe device palette (Okabe-Ito), used in device order, cycling.
const std::vector<std::string>& okabeItoPalette();
/// Fill colour of device d: okabeItoPalette()[d % 8].
std::string deviceColor(DeviceId d);

/// The task graph as DOT: nodes labelled "op_type\nname" (just the name for task graphs) and filled
/// with their device's colour; edges between devices bold and red, labelled with the bytes and the
/// transfer time (from `tl` when given and it has the transfer); a legend cluster of the devices.
std::string planToDot(const CostTable& t, const Plan& plan, const Timeline* tl = nullptr);

// ---- CSV --------------------------------------------------------------------------------------

/// One row per operator in task order: name,op_type,device,start_us,end_us,duration_us,provenance
/// (provenance of the cost used: modelled, measured or imported). RFC 4180 quoting for fields with
/// commas, quotes or line breaks; LF line endings; times with 3 decimals.
std::string timelineToCsv(const CostTable& t, const Timeline& tl);

// ---- Runtime placement maps -------------------------------------------------------------------

/// OpenVINO device name for a Partex device: by the device's kind when `p` has it (cpu -> CPU,
/// gpu -> GPU, npu -> NPU), otherwise its id upper-cased (so "cpu" -> "CPU", "dsp" -> "DSP").
std::string openVinoDeviceName(const std::string& deviceId, const Platform* p = nullptr);
/// OpenVINO HETERO affinity map: a JSON object {operator name: OpenVINO device}, in task order.
std::string openVinoAffinityJson(const CostTable& t, const Plan& plan, const Platform* p = nullptr);

/// onert backend name for a Partex device: by kind when `p` has it (cpu -> cpu, gpu -> acl_cl,
/// npu -> npu), otherwise by id ("cpu" -> cpu, "gpu" -> acl_cl, "npu" -> npu, anything else: the id).
std::string onertBackendName(const std::string& deviceId, const Platform* p = nullptr);
/// The onert per-operation backend map, one line without a newline:
/// OP_BACKEND_MAP="0=cpu;1=acl_cl;..." (index = operator index in the graph). This is the form
/// nnfw_set_backends_per_operation() takes and a shell can `export`.
std::string onertBackendMap(const CostTable& t, const Plan& plan, const Platform* p = nullptr);
/// The backends the map uses, for onert's BACKENDS variable: "cpu;acl_cl" (first use order).
std::string onertBackends(const CostTable& t, const Plan& plan, const Platform* p = nullptr);

// ---- Saving -----------------------------------------------------------------------------------

/// Writes any export text atomically (temporary file, then rename); a newline is added when the
/// text does not end with one.
Status saveExport(const std::string& path, const std::string& text);

}  // namespace partex
