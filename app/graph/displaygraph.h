#pragma once
/// \file What the graph view shows: operators, or for big models groups of operators (name scopes
/// cut into contiguous chunks of the topological order) that expand on demand, and the edges
/// between them. Plain data built from the cost table, independent of Qt items and of Graphviz.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "ir/graph.h"

namespace partex::gui {

/// Operators cut into groups.
struct Grouping {
  std::vector<std::string> names;        ///< Per group: common name scope, or "ops a-b".
  std::vector<std::vector<TaskId>> ops;  ///< Per group: its operators, in topological order.
  std::vector<int> groupOf;              ///< Per operator: its group.
  int size() const { return static_cast<int>(names.size()); }
};

/// Groups of at most `maxGroup` operators, contiguous in topological order; a group also ends
/// where the top-level name scope changes (when it already holds a quarter of `maxGroup`), so
/// that groups follow the model's blocks where the names have scopes ("layer3/conv2").
Grouping groupOperators(const CostTable& t, int maxGroup);

/// The block an operator's name places it in: "<key>.<N>" for a key of layers, layer, blocks, block,
/// blk or h that starts the name or follows '.' or '/' and is followed by '.', digits and '.' or '/'
/// ("model.layers.3.mlp" and "/model/layers.3/mlp/MatMul" give "layers.3", "encoder.layer.11.output"
/// "layer.11", "blk.0.attn_q" "blk.0", "transformer.h.2.attn" "h.2"); "" for none.
std::string blockOfName(const std::string& name);

/// Groups by the model's own blocks, for any size of model: one group per block (blockOfName) in
/// topological order of their first operator, the operators before the first block as "embedding"
/// and those after the last as "head"; an unnamed operator between blocks joins the group of its
/// first producer. Empty (size 0) when the names show no such structure: fewer than two blocks, or
/// fewer than half of the operators in one.
Grouping groupByBlocks(const CostTable& t);

/// A node of the display graph: one operator, one collapsed group, or one node of an open
/// control-flow operator's body (op and group -1; not scheduled: it runs where its operator runs).
struct DisplayNode {
  int op = -1;        ///< Operator, or -1.
  int group = -1;     ///< Collapsed group, or -1.
  int parentOp = -1;  ///< For a body node: the If/Loop/Scan operator whose body holds it.
  int body = -1;      ///< For a body node: index into the operator's Node::subgraphs.
  int bodyNode = -1;  ///< For a body node: index into that body's nodes.
};

/// An edge of the display graph: every cost-table edge between the two display nodes.
struct DisplayEdge {
  int src = 0;  ///< Display node.
  int dst = 0;
  std::vector<int32_t> costEdges;  ///< Indexes into CostTable::edges.
};

struct DisplayGraph {
  std::vector<DisplayNode> nodes;
  std::vector<DisplayEdge> edges;
  std::vector<int> nodeOfOp;  ///< Per operator: the display node showing it (itself or its group).
};

/// Builds the display graph: every operator when `grouping` is null, otherwise one node per
/// collapsed group and one per operator of an expanded group (`expanded` is per group).
DisplayGraph buildDisplayGraph(const CostTable& t, const Grouping* grouping, const std::vector<uint8_t>& expanded);

/// Whether operator `op` of `g` has bodies to show (If, Loop, Scan).
bool hasBodies(const Graph& g, int op);
/// Shows the bodies of the control-flow operators `openOps` of `g` (those shown as their own node):
/// one node per body node, the data edges inside each body, and an edge from the operator to each
/// body node that no other node of its body feeds, so that the layout hangs the bodies under it.
/// Bodies nested in a body are shown as their operator's single node.
void addBodies(DisplayGraph& d, const Graph& g, const std::vector<int>& openOps);

}  // namespace partex::gui
