#include "graph/displaygraph.h"

#include <algorithm>
#include <map>

namespace partex::gui {

static std::string topScope(const std::string& name) {
  if (name.empty()) return {};
  const size_t start = name.front() == '/' ? 1 : 0;
  const size_t slash = name.find('/', start);
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

static std::string commonScope(const CostTable& t, const std::vector<TaskId>& ops) {
  if (ops.empty()) return {};
  std::string prefix = t.taskNames[static_cast<size_t>(ops.front())];
  for (TaskId v : ops) {
    const std::string& n = t.taskNames[static_cast<size_t>(v)];
    size_t k = 0;
    while (k < prefix.size() && k < n.size() && prefix[k] == n[k]) ++k;
    prefix.resize(k);
  }
  const size_t slash = prefix.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string() : prefix.substr(0, slash);
}

Grouping groupOperators(const CostTable& t, int maxGroup) {
  Grouping g;
  maxGroup = std::max(1, maxGroup);
  g.groupOf.assign(static_cast<size_t>(t.numTasks()), 0);
  std::vector<TaskId> cur;
  std::string curScope;
  auto flush = [&] {
    if (cur.empty()) return;
    const int id = g.size();
    std::string name = commonScope(t, cur);
    const std::string range = "ops " + std::to_string(cur.front()) + "-" + std::to_string(cur.back());
    g.names.push_back(name.empty() ? range : name + " (" + range + ")");
    for (TaskId v : cur) g.groupOf[static_cast<size_t>(v)] = id;
    g.ops.push_back(std::move(cur));
    cur.clear();
  };
  for (TaskId v : t.topoOrder()) {
    const std::string scope = topScope(t.taskNames[static_cast<size_t>(v)]);
    if (static_cast<int>(cur.size()) >= maxGroup ||
        (scope != curScope && static_cast<int>(cur.size()) >= maxGroup / 4 && !cur.empty()))
      flush();
    if (cur.empty()) curScope = scope;
    cur.push_back(v);
  }
  flush();
  return g;
}

std::string blockOfName(const std::string& name) {
  static const char* const keys[] = {"layers", "layer", "blocks", "block", "blk", "h"};
  for (const char* key : keys) {
    const std::string k = std::string(key) + ".";
    for (size_t at = name.find(k); at != std::string::npos; at = name.find(k, at + 1)) {
      if (at > 0 && name[at - 1] != '.' && name[at - 1] != '/') continue;
      size_t i = at + k.size();
      const size_t digits0 = i;
      while (i < name.size() && i - digits0 < 9 && name[i] >= '0' && name[i] <= '9') ++i;
      if (i == digits0 || i >= name.size() || (name[i] != '.' && name[i] != '/')) continue;
      return name.substr(at, i - at);
    }
  }
  return {};
}

Grouping groupByBlocks(const CostTable& t) {
  const int n = t.numTasks();
  std::vector<std::string> block(static_cast<size_t>(n));
  std::map<std::string, int> sizes;
  int named = 0;
  for (TaskId v = 0; v < n; ++v) {
    block[static_cast<size_t>(v)] = blockOfName(t.taskNames[static_cast<size_t>(v)]);
    if (!block[static_cast<size_t>(v)].empty()) {
      ++named;
      ++sizes[block[static_cast<size_t>(v)]];
    }
  }
  if (sizes.size() < 2 || 2 * named < n) return {};
  const std::vector<TaskId> order = t.topoOrder();
  size_t first = order.size(), last = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (!block[static_cast<size_t>(order[i])].empty()) {
      first = std::min(first, i);
      last = i;
    }
  Grouping g;
  g.groupOf.assign(static_cast<size_t>(n), -1);
  std::map<std::string, int> ids;
  auto groupNamed = [&](const std::string& name) {
    auto [it, fresh] = ids.try_emplace(name, g.size());
    if (fresh) {
      g.names.push_back(name);
      g.ops.emplace_back();
    }
    return it->second;
  };
  if (first > 0) (void)groupNamed("embedding");
  for (size_t i = 0; i < order.size(); ++i) {
    const TaskId v = order[i];
    int gi = -1;
    if (!block[static_cast<size_t>(v)].empty()) {
      gi = groupNamed(block[static_cast<size_t>(v)]);
    } else if (i < first) {
      gi = groupNamed("embedding");
    } else if (i > last) {
      gi = groupNamed("head");
    } else {
      for (int32_t e : t.inEdges[static_cast<size_t>(v)])
        if (const int p = g.groupOf[static_cast<size_t>(t.edges[static_cast<size_t>(e)].src)]; p >= 0) {
          gi = p;
          break;
        }
      if (gi < 0) gi = g.groupOf[static_cast<size_t>(order[i - 1])];  // i > first: assigned
    }
    g.groupOf[static_cast<size_t>(v)] = gi;
    g.ops[static_cast<size_t>(gi)].push_back(v);
  }
  return g;
}

DisplayGraph buildDisplayGraph(const CostTable& t, const Grouping* grouping, const std::vector<uint8_t>& expanded) {
  DisplayGraph d;
  const int n = t.numTasks();
  d.nodeOfOp.assign(static_cast<size_t>(n), -1);
  if (!grouping) {
    for (TaskId v = 0; v < n; ++v) {
      d.nodeOfOp[static_cast<size_t>(v)] = static_cast<int>(d.nodes.size());
      d.nodes.push_back({v, -1});
    }
  } else {
    for (int gi = 0; gi < grouping->size(); ++gi) {
      const bool open = static_cast<size_t>(gi) < expanded.size() && expanded[static_cast<size_t>(gi)];
      if (open) {
        for (TaskId v : grouping->ops[static_cast<size_t>(gi)]) {
          d.nodeOfOp[static_cast<size_t>(v)] = static_cast<int>(d.nodes.size());
          d.nodes.push_back({v, -1});
        }
      } else {
        const int node = static_cast<int>(d.nodes.size());
        d.nodes.push_back({-1, gi});
        for (TaskId v : grouping->ops[static_cast<size_t>(gi)]) d.nodeOfOp[static_cast<size_t>(v)] = node;
      }
    }
  }
  std::map<std::pair<int, int>, size_t> index;
  for (size_t e = 0; e < t.edges.size(); ++e) {
    const int a = d.nodeOfOp[static_cast<size_t>(t.edges[e].src)], b = d.nodeOfOp[static_cast<size_t>(t.edges[e].dst)];
    if (a < 0 || b < 0 || a == b) continue;
    auto [it, fresh] = index.try_emplace({a, b}, d.edges.size());
    if (fresh) d.edges.push_back({a, b, {}});
    d.edges[it->second].costEdges.push_back(static_cast<int32_t>(e));
  }
  return d;
}

bool hasBodies(const Graph& g, int op) {
  if (op < 0 || op >= static_cast<int>(g.nodes.size())) return false;
  const Node& n = g.nodes[static_cast<size_t>(op)];
  return !n.subgraphs.empty() && (n.domain.empty() || n.domain == "ai.onnx");
}

void addBodies(DisplayGraph& d, const Graph& g, const std::vector<int>& openOps) {
  for (int op : openOps) {
    if (!hasBodies(g, op) || static_cast<size_t>(op) >= d.nodeOfOp.size()) continue;
    const int parent = d.nodeOfOp[static_cast<size_t>(op)];
    if (parent < 0 || d.nodes[static_cast<size_t>(parent)].op != op) continue;  // inside a collapsed group
    const Node& n = g.nodes[static_cast<size_t>(op)];
    for (size_t b = 0; b < n.subgraphs.size(); ++b) {
      const Graph* body = n.subgraphs[b].second.get();
      if (!body) continue;
      const int first = static_cast<int>(d.nodes.size());
      for (size_t k = 0; k < body->nodes.size(); ++k)
        d.nodes.push_back({-1, -1, op, static_cast<int>(b), static_cast<int>(k)});
      for (size_t k = 0; k < body->nodes.size(); ++k) {
        std::vector<int> from;
        for (ValueId v : body->nodes[k].inputs) {
          if (v < 0 || static_cast<size_t>(v) >= body->values.size()) continue;
          const OpId p = body->values[static_cast<size_t>(v)].producer;
          if (p >= 0 && static_cast<size_t>(p) != k) from.push_back(first + p);
        }
        if (from.empty()) from.push_back(parent);
        std::sort(from.begin(), from.end());
        from.erase(std::unique(from.begin(), from.end()), from.end());
        for (int src : from) d.edges.push_back({src, first + static_cast<int>(k), {}});
      }
    }
  }
}

}  // namespace partex::gui
