#pragma once
/// \file The interface between `partex-cli render` and the module that draws its images
/// (libpartex_render_images.so, beside the programs): everything Qt GUI and Graphviz is in the module,
/// so that partex-cli loads neither for any other command (start-up: every command paid for resolving
/// Qt GUI's, Qt SVG's and Graphviz's symbols and their dependencies'). The command prepares what core
/// computes (the plan, its timeline, the DOT text, the fused kernels, titles) and the module paints.

#include <cctype>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "plan/fusedkernels.h"
#include "sim/simulator.h"

namespace partex::cli {

/// What to draw. Pointers are the caller's and outlive the call.
struct RenderImagesJob {
  const CostTable* table = nullptr;
  const Timeline* timeline = nullptr;
  std::vector<FusedKernel> fused;          ///< Of the plan, with the timeline's times (may be empty).
  std::vector<std::string> deviceColors;   ///< Per device: the platform's own colour, or "" (the palette's).
  std::vector<int> taskDevice;             ///< Per task: its device (colours the graph's nodes n<task>).
  std::string dot;                         ///< The graph (planToDot), when graphPath is set.
  std::string graphPath;                   ///< .svg or .png; empty: no graph image.
  std::string ganttPath;                   ///< .svg or .png; empty: no Gantt chart.
  std::string title;                       ///< The Gantt chart's title.
  std::string referenceLabel;              ///< "HEFT plan" beside the makespan change, with referenceUs > 0.
  double referenceUs = 0;
  int width = 1600;                        ///< Gantt image width in pixels.
};

/// "svg" or "png" from a path's extension (any case), or "" for anything else.
inline std::string imageType(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "svg" || ext == "png" ? ext : "";
}

/// The module's entry point, `extern "C"` under this name: draws the images, writes each file whole
/// (atomically) and returns 0 with `written` listing them; on an error returns 2 with `error` one line
/// (naming the file) and leaves no file it wrote.
using RenderImagesFn = int (*)(const RenderImagesJob* job, std::string* error, std::vector<std::string>* written);
inline constexpr const char* kRenderImagesSymbol = "partex_render_images";
inline constexpr const char* kRenderImagesModule = "libpartex_render_images.so";

}  // namespace partex::cli

#ifdef PARTEX_RENDER_LINKED
extern "C" int partex_render_images(const partex::cli::RenderImagesJob* job, std::string* error,
                                    std::vector<std::string>* written);
#endif
