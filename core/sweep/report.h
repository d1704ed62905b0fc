#pragma once
/// \file The sweep report: three SVG plots drawn from the results table and a short Markdown summary.
///  - ratio_to_lower_bound.svg: box plots of makespan / lower bound per algorithm (best median first);
///  - speedup_vs_bandwidth.svg: geometric-mean speed-up over the best single device against the link
///    bandwidth scale, one line per algorithm, one panel per platform;
///  - sched_time_vs_size.svg: scheduler time against graph size (operators), one colour per algorithm.

#include <string>
#include <vector>

#include "support/result.h"
#include "sweep/results.h"

namespace partex {

struct SweepSpec;
struct SweepTable;

std::string ratioBoxPlotSvg(const std::vector<SweepRow>& rows);
std::string speedupVsBandwidthSvg(const std::vector<SweepRow>& rows);
std::string schedTimeVsSizeSvg(const std::vector<SweepRow>& rows);
/// report.md: counts, a table per algorithm (valid cases, geometric mean and median of makespan / lower
/// bound, wins, geometric-mean speed-up, median scheduler time) and the plots.
std::string reportMarkdown(const SweepSpec& spec, const SweepTable& table);

/// Writes report.md and plots/*.svg into the sweep's output folder (atomically, each).
Status writeSweepReport(const SweepSpec& spec, const SweepTable& table);

}  // namespace partex
