#pragma once
/// \file Import of ONNX Runtime profiling output (SessionOptions::enable_profiling): a Chrome-trace
/// JSON, either an array of events or an object with "traceEvents". Per-node kernel times are the
/// events with "cat": "Node" whose name is "<node name>_kernel_time"; "args.op_name" carries the op
/// type and "args.provider" the execution provider; "dur" is in microseconds. A node that ran several
/// times (several session runs) gets the median of its durations. The result is a Profile with one
/// device (the id the user names) marked imported and without a model hash: it is matched to a model
/// by node name, and applyProfile() reports the nodes that do not match.

#include <map>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "support/result.h"

namespace partex {

/// What an import found besides the profile.
struct OrtImportInfo {
  int events = 0;                           ///< Trace events read.
  int kernelEvents = 0;                     ///< "Node" kernel-time events used.
  std::map<std::string, int> providers;     ///< Execution provider -> kernel events.
  std::vector<std::string> otherProviders;  ///< Nodes skipped because of the provider filter.
};

/// Parses ONNX Runtime profiling JSON into a Profile for device `deviceId`. `provider` (e.g.
/// "CPUExecutionProvider"), when not empty, keeps only that provider's events. `origin` names the file
/// in errors. Fails on malformed JSON, on a file with no kernel-time events, or on a negative duration.
Result<Profile> parseOrtProfile(const std::string& json, const std::string& origin, const std::string& deviceId,
                                const std::string& provider = "", OrtImportInfo* info = nullptr);
/// Reads an ONNX Runtime profile file (errors name `path`).
Result<Profile> loadOrtProfileFile(const std::string& path, const std::string& deviceId,
                                   const std::string& provider = "", OrtImportInfo* info = nullptr);

}  // namespace partex
