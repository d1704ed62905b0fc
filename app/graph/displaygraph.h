#pragma once
/// \file What the graph view shows: operators, or for big models groups of operators (name scopes
/// cut into contiguous chunks of the topological order) that expand on demand, and the edges
/// between them. Plain data built from the cost table, independent of Qt items and of Graphviz.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "ir/graph.h"

namespace partex::gui {

/// Operators cut into groups. A group may lie inside another (a layer's routed experts inside the
/// layer): it shows only while its parent is expanded, and its operators are also its parent's.
struct Grouping {
  std::vector<std::string> names;        ///< Per group: common name scope, or "ops a-b".
  std::vector<std::vector<TaskId>> ops;  ///< Per group: its operators (its subgroups' included), in topological order.
  std::vector<int> groupOf;              ///< Per operator: the innermost group holding it.
  std::vector<int> parent;               ///< Per group: the group it lies in, -1 at the top (empty: all at the top).
  int size() const { return static_cast<int>(names.size()); }
  int parentOf(int g) const { return g >= 0 && static_cast<size_t>(g) < parent.size() ? parent[static_cast<size_t>(g)] : -1; }
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

/// The scope of a block's routed experts in an operator's name: the name up to and including the
/// first scope after its block (blockOfName) that contains "moe" or is "experts", when a '.' or '/'
/// follows it ("layers.3.moe.up_exps" gives "layers.3.moe", "model.layers.0.block_sparse_moe.experts.1.w1"
/// "model.layers.0.block_sparse_moe", "/model/layers.0/mlp/experts/MatMul" "/model/layers.0/mlp/experts");
/// "" for none.
std::string expertScopeOfName(const std::string& name);

/// Per task of `t`: the call of a model-local ONNX function it was expanded from, as "call (function)"
/// (the importer's kFunctionCallAttr and kFunctionAttr on the node of the same name); "" for none.
/// Empty when no operator came from a function.
std::vector<std::string> functionCallsOf(const CostTable& t, const Graph& g);

/// Groups by the model's own blocks, for any size of model: one group per block (blockOfName) in
/// topological order of their first operator, the operators before the first block as "embedding"
/// and those after the last as "head"; an unnamed operator between blocks joins the group of its
/// first producer. Inside a block, the operators of one expert scope (expertScopeOfName), two or more,
/// form a subgroup: expanding a layer shows its attention operator by operator and its experts as one
/// box; so do the operators of one call of an ONNX local function (`calls`, functionCallsOf) that lie in
/// one block and in no expert subgroup. Without blocks, each call of two or more operators is a group of
/// its own and the other operators stay ungrouped (groupOf -1). Empty (size 0) when the names show no
/// such structure and no call does: fewer than two blocks, or fewer than half of the operators in one.
Grouping groupByBlocks(const CostTable& t, const std::vector<std::string>& calls = {});

/// The groups that show operator `op` from the innermost out (groupOf, its parent, ...).
std::vector<int> groupChain(const Grouping& g, TaskId op);

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
/// collapsed group whose parents are all expanded, and one per operator whose groups are all
/// expanded or that is in no group (`expanded` is per group).
DisplayGraph buildDisplayGraph(const CostTable& t, const Grouping* grouping, const std::vector<uint8_t>& expanded);

/// Whether operator `op` of `g` has bodies to show (If, Loop, Scan).
bool hasBodies(const Graph& g, int op);
/// Shows the bodies of the control-flow operators `openOps` of `g` (those shown as their own node):
/// one node per body node, the data edges inside each body, and an edge from the operator to each
/// body node that no other node of its body feeds, so that the layout hangs the bodies under it.
/// Bodies nested in a body are shown as their operator's single node.
void addBodies(DisplayGraph& d, const Graph& g, const std::vector<int>& openOps);

}  // namespace partex::gui
