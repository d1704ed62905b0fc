#include "graph/layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace partex::gui {

namespace {

/// Owns a Graphviz context and graph; frees the layout, the graph and the context in that order.
class GvGraph {
 public:
  GvGraph() : ctx_(gvContext()) {
    if (ctx_) graph_ = agopen(const_cast<char*>("g"), Agdirected, nullptr);
  }
  ~GvGraph() {
    if (graph_) {
      if (laidOut_) gvFreeLayout(ctx_, graph_);
      agclose(graph_);
    }
    if (ctx_) gvFreeContext(ctx_);
  }
  GvGraph(const GvGraph&) = delete;
  GvGraph& operator=(const GvGraph&) = delete;
  bool ok() const { return ctx_ && graph_; }
  Agraph_t* graph() const { return graph_; }
  int layout() {
    const int rc = gvLayout(ctx_, graph_, "dot");
    laidOut_ = rc == 0;
    return rc;
  }

 private:
  GVC_t* ctx_ = nullptr;
  Agraph_t* graph_ = nullptr;
  bool laidOut_ = false;
};

std::mutex& graphvizMutex() {
  static std::mutex m;
  return m;
}

char* cs(const char* s) {
  return const_cast<char*>(s);
}

}  // namespace

Result<LayoutResult> layoutGraph(const LayoutInput& in) {
  const auto t0 = std::chrono::steady_clock::now();
  LayoutResult out;
  out.centers.resize(in.nodes.size());
  out.edgePoints.resize(in.edges.size());
  if (in.nodes.empty()) return out;
  std::lock_guard<std::mutex> lock(graphvizMutex());
  GvGraph gv;
  if (!gv.ok()) return makeError("Graphviz: cannot create a context");
  Agraph_t* g = gv.graph();
  agattr(g, AGRAPH, cs("rankdir"), cs("TB"));
  agattr(g, AGRAPH, cs("nodesep"), cs("0.25"));
  agattr(g, AGRAPH, cs("ranksep"), cs("0.45"));
  agattr(g, AGRAPH, cs("splines"), cs("spline"));
  // Fewer crossing-minimisation passes: dot's default search is the slow part on big graphs.
  agattr(g, AGRAPH, cs("mclimit"), cs(in.nodes.size() > 600 ? "0.3" : "1"));
  agattr(g, AGRAPH, cs("nslimit"), cs(in.nodes.size() > 600 ? "2" : "100"));
  agattr(g, AGNODE, cs("shape"), cs("box"));
  agattr(g, AGNODE, cs("fixedsize"), cs("true"));
  agattr(g, AGNODE, cs("label"), cs(""));
  agattr(g, AGNODE, cs("width"), cs("2"));
  agattr(g, AGNODE, cs("height"), cs("0.7"));
  agattr(g, AGEDGE, cs("arrowsize"), cs("0.7"));
  std::vector<Agnode_t*> nodes(in.nodes.size());
  for (size_t i = 0; i < in.nodes.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(g, const_cast<char*>(name.c_str()), 1);
    const std::string w = std::to_string(std::max(0.1, in.nodes[i].width / 72.0));
    const std::string h = std::to_string(std::max(0.1, in.nodes[i].height / 72.0));
    agsafeset(nodes[i], cs("width"), const_cast<char*>(w.c_str()), cs("2"));
    agsafeset(nodes[i], cs("height"), const_cast<char*>(h.c_str()), cs("0.7"));
  }
  std::vector<Agedge_t*> edges(in.edges.size(), nullptr);
  for (size_t i = 0; i < in.edges.size(); ++i) {
    const auto& e = in.edges[i];
    if (e.src < 0 || e.dst < 0 || static_cast<size_t>(e.src) >= nodes.size() ||
        static_cast<size_t>(e.dst) >= nodes.size() || e.src == e.dst)
      continue;
    const std::string key = "e" + std::to_string(i);
    edges[i] = agedge(g, nodes[static_cast<size_t>(e.src)], nodes[static_cast<size_t>(e.dst)],
                      const_cast<char*>(key.c_str()), 1);
  }
  if (gv.layout() != 0) return makeError("Graphviz dot failed to lay the graph out");
  const boxf bb = GD_bb(g);
  const double top = bb.UR.y;
  auto flip = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, top - p.y}; };
  for (size_t i = 0; i < nodes.size(); ++i) out.centers[i] = flip(ND_coord(nodes[i]));
  for (size_t i = 0; i < edges.size(); ++i) {
    if (!edges[i]) continue;
    const splines* spl = ED_spl(edges[i]);
    if (!spl || spl->size < 1) continue;
    const bezier& bz = spl->list[0];
    auto& pts = out.edgePoints[i];
    if (bz.sflag) pts.push_back(flip(bz.sp));
    for (int k = 0; k < bz.size; ++k) pts.push_back(flip(bz.list[k]));
    if (bz.eflag) {
      // The spline stops short of the arrow head: end it at the arrow tip with a straight segment.
      const LayoutPoint last = pts.empty() ? flip(bz.ep) : pts.back();
      const LayoutPoint tip = flip(bz.ep);
      pts.push_back(last);
      pts.push_back(tip);
      pts.push_back(tip);
    }
  }
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

LayoutResult layoutByLevels(const LayoutInput& in) {
  LayoutResult out;
  const size_t n = in.nodes.size();
  out.centers.resize(n);
  out.edgePoints.resize(in.edges.size());
  std::vector<int> level(n, 0);
  // Edges go from lower to higher node index in a topologically numbered graph; relax a few times
  // otherwise (cycles cannot make this loop forever: it is bounded by n passes).
  for (size_t pass = 0; pass < n; ++pass) {
    bool changed = false;
    for (const auto& e : in.edges) {
      if (e.src < 0 || e.dst < 0 || static_cast<size_t>(e.src) >= n || static_cast<size_t>(e.dst) >= n ||
          e.src == e.dst)
        continue;
      const int l = level[static_cast<size_t>(e.src)] + 1;
      if (l > level[static_cast<size_t>(e.dst)] && l < static_cast<int>(n)) {
        level[static_cast<size_t>(e.dst)] = l;
        changed = true;
      }
    }
    if (!changed) break;
  }
  std::vector<double> rowX;
  double maxH = 50;
  double maxW = 160;
  for (const auto& nd : in.nodes) {
    maxH = std::max(maxH, nd.height);
    maxW = std::max(maxW, nd.width);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto l = static_cast<size_t>(level[i]);
    if (rowX.size() <= l) rowX.resize(l + 1, 0);
    out.centers[i] = {rowX[l] + maxW / 2, static_cast<double>(l) * (maxH + 40) + maxH / 2};
    rowX[l] += maxW + 20;
    out.width = std::max(out.width, rowX[l]);
    out.height = std::max(out.height, static_cast<double>(l + 1) * (maxH + 40));
  }
  for (size_t i = 0; i < in.edges.size(); ++i) {
    const auto& e = in.edges[i];
    if (e.src < 0 || e.dst < 0 || static_cast<size_t>(e.src) >= n || static_cast<size_t>(e.dst) >= n) continue;
    LayoutPoint a = out.centers[static_cast<size_t>(e.src)], b = out.centers[static_cast<size_t>(e.dst)];
    a.y += in.nodes[static_cast<size_t>(e.src)].height / 2;
    b.y -= in.nodes[static_cast<size_t>(e.dst)].height / 2;
    out.edgePoints[i] = {a, a, b, b};
  }
  return out;
}

}  // namespace partex::gui
