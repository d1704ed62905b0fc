#pragma once
/// \file Graph layout behind one RAII Graphviz wrapper. Input and output are plain structs (no
/// Graphviz type leaks), so the scene and its tests do not need Graphviz, and layouts can be computed
/// on a worker thread and handed to the GUI thread by value.

#include <string>
#include <vector>

#include "support/result.h"

namespace partex::gui {

/// A point in scene coordinates (points, y down).
struct LayoutPoint {
  double x = 0;
  double y = 0;
};

/// What to lay out: boxes of given size and directed edges between them (indexes into nodes).
struct LayoutInput {
  struct Node {
    double width = 160;  ///< Points.
    double height = 50;
  };
  struct Edge {
    int src = 0;
    int dst = 0;
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
};

/// Where things went: node centres, and per edge its cubic B-spline control points (1 + 3k points,
/// Graphviz style: start, then (c1, c2, end) triples) ending at the destination's border, y down.
struct LayoutResult {
  std::vector<LayoutPoint> centers;
  std::vector<std::vector<LayoutPoint>> edgePoints;
  double width = 0;
  double height = 0;
  double ms = 0;  ///< Time Graphviz took.
};

/// Lays the graph out top to bottom with Graphviz dot. Thread-safe (Graphviz is not: calls are
/// serialised). Never call it on the GUI thread for large graphs: dot takes seconds beyond a few
/// thousand nodes.
Result<LayoutResult> layoutGraph(const LayoutInput& in);

/// A fallback that needs no Graphviz: nodes in rows by longest-path level, straight edges.
/// Used when Graphviz fails, and by tests.
LayoutResult layoutByLevels(const LayoutInput& in);

}  // namespace partex::gui
