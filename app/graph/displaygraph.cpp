#include "graph/displaygraph.h"

#include <algorithm>
#include <map>
#include <set>

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

std::string expertScopeOfName(const std::string& name) {
  const std::string block = blockOfName(name);
  if (block.empty()) return {};
  size_t at = name.find(block);
  while (at != std::string::npos && at > 0 && name[at - 1] != '.' && name[at - 1] != '/') at = name.find(block, at + 1);
  if (at == std::string::npos) return {};
  // Scopes after the block: each ends at the next '.' or '/'; the last segment is the operator's own.
  size_t start = at + block.size() + 1;
  while (start < name.size()) {
    const size_t end = name.find_first_of("./", start);
    if (end == std::string::npos) break;
    const std::string seg = name.substr(start, end - start);
    if (seg.find("moe") != std::string::npos || seg == "experts") return name.substr(0, end);
    start = end + 1;
  }
  return {};
}

std::vector<int> groupChain(const Grouping& g, TaskId op) {
  std::vector<int> chain;
  if (op < 0 || static_cast<size_t>(op) >= g.groupOf.size()) return chain;
  for (int gi = g.groupOf[static_cast<size_t>(op)]; gi >= 0 && chain.size() < 64; gi = g.parentOf(gi)) chain.push_back(gi);
  return chain;
}

std::vector<std::string> functionCallsOf(const CostTable& t, const Graph& g) {
  std::map<std::string, std::string> byName;
  for (const Node& node : g.nodes) {
    const std::string call = node.attrString(kFunctionCallAttr, "");
    if (!call.empty()) byName[node.name] = call + " (" + node.attrString(kFunctionAttr, "") + ")";
  }
  if (byName.empty()) return {};
  std::vector<std::string> calls(static_cast<size_t>(t.numTasks()));
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (auto it = byName.find(t.taskNames[static_cast<size_t>(v)]); it != byName.end()) calls[static_cast<size_t>(v)] = it->second;
  return calls;
}

/// One group per call of two or more operators, the others ungrouped: a model without blocks whose
/// operators came from ONNX local functions.
static Grouping groupByCalls(const CostTable& t, const std::vector<std::string>& calls) {
  Grouping g;
  g.groupOf.assign(static_cast<size_t>(t.numTasks()), -1);
  std::map<std::string, std::vector<TaskId>> members;
  for (TaskId v : t.topoOrder())
    if (!calls[static_cast<size_t>(v)].empty()) members[calls[static_cast<size_t>(v)]].push_back(v);
  for (TaskId v : t.topoOrder()) {
    const std::string& c = calls[static_cast<size_t>(v)];
    if (c.empty() || g.groupOf[static_cast<size_t>(v)] >= 0) continue;
    auto& ops = members[c];
    if (ops.size() < 2) continue;
    const int id = g.size();
    g.names.push_back(c);
    for (TaskId u : ops) g.groupOf[static_cast<size_t>(u)] = id;
    g.ops.push_back(ops);
  }
  g.parent.assign(static_cast<size_t>(g.size()), -1);
  if (g.size() == 0) return {};
  return g;
}

Grouping groupByBlocks(const CostTable& t, const std::vector<std::string>& calls) {
  const bool haveCalls = calls.size() == static_cast<size_t>(t.numTasks());
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
  if (sizes.size() < 2 || 2 * named < n) return haveCalls ? groupByCalls(t, calls) : Grouping{};
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
  // A block's routed experts (router, expert projections, their routing sum): one subgroup per scope.
  g.parent.assign(static_cast<size_t>(g.size()), -1);
  const int blocks = g.size();
  for (int gi = 0; gi < blocks; ++gi) {
    std::map<std::string, std::vector<TaskId>> scopes;
    for (TaskId v : g.ops[static_cast<size_t>(gi)])
      if (std::string s = expertScopeOfName(t.taskNames[static_cast<size_t>(v)]); !s.empty()) scopes[s].push_back(v);
    for (auto& [scope, ops] : scopes) {
      if (ops.size() < 2) continue;
      const int sub = g.size();
      g.names.push_back(scope);
      g.parent.push_back(gi);
      for (TaskId v : ops) g.groupOf[static_cast<size_t>(v)] = sub;
      g.ops.push_back(std::move(ops));
    }
    // A function call inside the block, outside its expert subgroups: a subgroup too.
    if (!haveCalls) continue;
    std::map<std::string, std::vector<TaskId>> byCall;
    std::set<std::string> spilled;  // calls with operators elsewhere (another block or a subgroup)
    for (TaskId v : g.ops[static_cast<size_t>(gi)]) {
      const std::string& c = calls[static_cast<size_t>(v)];
      if (c.empty()) continue;
      if (g.groupOf[static_cast<size_t>(v)] != gi) spilled.insert(c);
      byCall[c].push_back(v);
    }
    for (auto& [c, ops] : byCall) {
      if (ops.size() < 2 || spilled.count(c)) continue;
      size_t total = 0;
      for (const auto& x : calls) total += x == c ? 1 : 0;
      if (total != ops.size()) continue;
      const int sub = g.size();
      g.names.push_back(c);
      g.parent.push_back(gi);
      for (TaskId v : ops) g.groupOf[static_cast<size_t>(v)] = sub;
      g.ops.push_back(std::move(ops));
    }
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
    auto isOpen = [&](int gi) { return static_cast<size_t>(gi) < expanded.size() && expanded[static_cast<size_t>(gi)]; };
    std::vector<int> nodeOfGroup(static_cast<size_t>(grouping->size()), -1);
    for (int gi = 0; gi < grouping->size(); ++gi) {
      if (grouping->parentOf(gi) >= 0) continue;  // shown through its parent
      if (isOpen(gi)) {
        for (TaskId v : grouping->ops[static_cast<size_t>(gi)]) {
          // The outermost closed group between the operator and this one shows it, else the operator itself.
          int shownBy = -1;
          for (int c : groupChain(*grouping, v)) {
            if (c == gi) break;
            if (!isOpen(c)) shownBy = c;
          }
          if (shownBy < 0) {
            d.nodeOfOp[static_cast<size_t>(v)] = static_cast<int>(d.nodes.size());
            d.nodes.push_back({v, -1});
            continue;
          }
          int& node = nodeOfGroup[static_cast<size_t>(shownBy)];
          if (node < 0) {
            node = static_cast<int>(d.nodes.size());
            d.nodes.push_back({-1, shownBy});
          }
          d.nodeOfOp[static_cast<size_t>(v)] = node;
        }
      } else {
        const int node = static_cast<int>(d.nodes.size());
        d.nodes.push_back({-1, gi});
        for (TaskId v : grouping->ops[static_cast<size_t>(gi)]) d.nodeOfOp[static_cast<size_t>(v)] = node;
      }
    }
    for (TaskId v = 0; v < n; ++v)  // operators in no group
      if (static_cast<size_t>(v) < grouping->groupOf.size() && grouping->groupOf[static_cast<size_t>(v)] < 0) {
        d.nodeOfOp[static_cast<size_t>(v)] = static_cast<int>(d.nodes.size());
        d.nodes.push_back({v, -1});
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
