#include "onnx/inferguard.h"

#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace partex::onnximp {

namespace {

using onnx::InferenceContext;

/// The input's rank when its type carries a shape, else -1.
int rankOf(const InferenceContext& ctx, size_t index) {
  if (index >= ctx.getNumInputs()) return -1;
  const onnx::TypeProto* t = ctx.getInputType(index);
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

bool hasAttribute(const InferenceContext& ctx, const char* name) {
  return ctx.getAttribute(name) != nullptr;
}

int64_t intAttribute(const InferenceContext& ctx, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  return a && a->has_i() ? a->i() : fallback;
}

/// Starts the text of every refusal, so that callers can tell them from ONNX's own errors.
constexpr std::string_view kMarker = "partex-guard: ";

[[noreturn]] void refuse(const std::string& op, const std::string& why) {
  fail_shape_inference(kMarker, op, ": ", why);
}

/// Gives up on the node without refusing the model: for what a valid model can also have (an input
/// whose type nothing upstream could infer). The importer then leaves the outputs unknown.
[[noreturn]] void skip(const std::string& op, const std::string& why) {
  fail_shape_inference(op, ": ", why);
}

/// Conv, ConvInteger, QLinearConv, ConvTranspose: libonnx takes the kernel's spatial size from the
/// weight's shape and indexes the input's per-axis vectors with it; a weight of another rank than
/// the input reads past them. ConvTranspose also reads the weight's dimension 1.
void checkConvRanks(const InferenceContext& ctx, const std::string& op, size_t x, size_t w) {
  const int rx = rankOf(ctx, x), rw = rankOf(ctx, w);
  if (rx < 0 || rw < 0) return;
  if (rx != rw)
    refuse(op, "the input has rank " + std::to_string(rx) + " but the weight has rank " + std::to_string(rw));
}

/// A check run before ONNX's own inference function; it throws onnx::InferenceError to refuse.
using Guard = void (*)(const InferenceContext&, const std::string& op);

void guardConv(const InferenceContext& ctx, const std::string& op) {
  checkConvRanks(ctx, op, 0, 1);
}
void guardQLinearConv(const InferenceContext& ctx, const std::string& op) {
  checkConvRanks(ctx, op, 0, 3);
}

/// MaxUnpool (two inputs) copies dimension 1 of the indices' shape without looking at its type.
void guardMaxUnpool(const InferenceContext& ctx, const std::string& op) {
  if (ctx.getNumInputs() == 3 || rankOf(ctx, 0) < 0) return;
  if (rankOf(ctx, 1) < 2) refuse(op, "the indices input needs a known shape of rank 2 or more");
}

/// MaxRoiPool writes pooled_shape[0] and [1]: the input needs two spatial axes or more.
void guardMaxRoiPool(const InferenceContext& ctx, const std::string& op) {
  const int rx = rankOf(ctx, 0);
  if (rx >= 0 && rx < 4 && hasAttribute(ctx, "pooled_shape") && rankOf(ctx, 1) == 2)
    refuse(op, "the input has rank " + std::to_string(rx) + "; it needs rank 4 or more");
}

/// STFT reads the signal's dimension 1 (its length) from any shape it is given.
void guardStft(const InferenceContext& ctx, const std::string& op) {
  const int rx = rankOf(ctx, 0);
  if (rx >= 0 && rx < 2) refuse(op, "the signal has rank " + std::to_string(rx) + "; it needs rank 2 or more");
}

/// LayerNormalization writes its mean and inverse-deviation outputs' dimensions from the axis on, in
/// an int loop: an axis below -rank, or one that does not fit an int, starts it at a negative one.
void guardLayerNormalization(const InferenceContext& ctx, const std::string& op) {
  const int rx = rankOf(ctx, 0);
  if (rx < 0 || ctx.getNumOutputs() < 2) return;
  if (const int64_t axis = intAttribute(ctx, "axis", -1); axis < -rx || axis > std::numeric_limits<int32_t>::max())
    refuse(op, "axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rx));
}

/// GatherND copies the data's dimensions from (indices' last dimension + batch_dims) on; where that
/// sum is negative (or overflows) it reads before the data's first dimension.
void guardGatherNd(const InferenceContext& ctx, const std::string& op) {
  const int rd = rankOf(ctx, 0), ri = rankOf(ctx, 1);
  if (rd < 1 || ri < 1) return;
  const auto& last = ctx.getInputType(1)->tensor_type().shape().dim(ri - 1);
  if (!last.has_dim_value()) return;
  const int64_t batchDims = intAttribute(ctx, "batch_dims", 0);
  int64_t first = 0;
  if (__builtin_add_overflow(last.dim_value(), batchDims, &first) || first < 0)
    refuse(op, "the indices' last dimension (" + std::to_string(last.dim_value()) + ") plus batch_dims (" +
                   std::to_string(batchDims) + ") is negative");
}

/// SplitToSequence with a scalar split divides the axis' size by its value: 0 traps (SIGFPE), and so
/// does -1 under a dimension of INT64_MIN.
void guardSplitToSequence(const InferenceContext& ctx, const std::string& op) {
  if (rankOf(ctx, 1) != 0) return;
  const onnx::TensorProto* split = ctx.getInputData(1);
  if (!split) return;
  std::vector<int64_t> values;
  if (split->data_type() == onnx::TensorProto::INT64)
    values = onnx::ParseData<int64_t>(split);
  else if (split->data_type() == onnx::TensorProto::INT32)
    for (int32_t v : onnx::ParseData<int32_t>(split)) values.push_back(v);
  if (values.empty()) return;
  if (values[0] == 0) refuse(op, "the split is 0");
  if (values[0] == -1 && rankOf(ctx, 0) > 0)
    for (const auto& d : ctx.getInputType(0)->tensor_type().shape().dim())
      if (d.has_dim_value() && d.dim_value() == std::numeric_limits<int64_t>::min())
        refuse(op, "the split is -1 and the input has a dimension of " + std::to_string(d.dim_value()));
}

/// How many values onnx::ParseData reads from a constant: raw_data's whole elements, else the typed
/// field's; -1 for external data (ParseData refuses it itself).
int64_t storedValues(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return -1;
  if (t.has_raw_data()) {
    switch (t.data_type()) {
      case onnx::TensorProto::DOUBLE:
      case onnx::TensorProto::INT64:
        return static_cast<int64_t>(t.raw_data().size() / 8);
      case onnx::TensorProto::FLOAT:
      case onnx::TensorProto::INT32:
        return static_cast<int64_t>(t.raw_data().size() / 4);
      case onnx::TensorProto::INT16:
        return static_cast<int64_t>(t.raw_data().size() / 2);
      default:
        return -1;
    }
  }
  switch (t.data_type()) {
    case onnx::TensorProto::DOUBLE:
      return t.double_data_size();
    case onnx::TensorProto::INT64:
      return t.int64_data_size();
    case onnx::TensorProto::FLOAT:
      return t.float_data_size();
    default:
      return t.int32_data_size();
  }
}

/// Range, once start, limit and delta are all constants, reads the first value of each.
void guardRange(const InferenceContext& ctx, const std::string& op) {
  if (ctx.getNumInputs() < 3) return;
  static const char* const kNames[] = {"start", "limit", "delta"};
  const onnx::TensorProto* data[3] = {ctx.getInputData(0), ctx.getInputData(1), ctx.getInputData(2)};
  if (!data[0] || !data[1] || !data[2]) return;
  for (size_t i = 0; i < 3; ++i)
    if (storedValues(*data[i]) == 0) refuse(op, std::string("the ") + kNames[i] + " constant has no value");
}

/// ConstantOfShape and Expand give their output one axis per element of their 1-D shape input, data or
/// not: a shape input declared with 2^63 elements has libonnx add dimensions until memory runs out. No
/// model needs that many axes, but a long shape is no error in itself: this gives up on the node.
constexpr int64_t kMaxInferredAxes = int64_t{1} << 16;

void guardShapeLength(const InferenceContext& ctx, const std::string& op, size_t shapeInput) {
  if (rankOf(ctx, shapeInput) != 1) return;
  const auto& length = ctx.getInputType(shapeInput)->tensor_type().shape().dim(0);
  if (length.has_dim_value() && length.dim_value() > kMaxInferredAxes)
    skip(op, "the shape input has " + std::to_string(length.dim_value()) + " elements; more than " +
                 std::to_string(kMaxInferredAxes) + " axes are not inferred");
}

void guardConstantOfShape(const InferenceContext& ctx, const std::string& op) {
  guardShapeLength(ctx, op, 0);
}
void guardExpand(const InferenceContext& ctx, const std::string& op) {
  guardShapeLength(ctx, op, 1);
}

/// EyeLike (with a dtype attribute) and ai.onnx.ml's CategoryMapper, DictVectorizer and LabelEncoder
/// read their input's type without looking whether there is one. An input without a type is no
/// error of the model (its producer's output may just be unknown): this gives up on the node.
void guardTypedInput(const InferenceContext& ctx, const std::string& op) {
  if (ctx.getNumInputs() > 0 && !ctx.getInputType(0)) skip(op, "input 0 has no type");
}

struct GuardEntry {
  Guard guard;
  /// Whether the guard can refuse a model (skip-only guards never do).
  bool refuses;
};

const GuardEntry* guardFor(const std::string& op, const std::string& domain) {
  static const std::map<std::pair<std::string, std::string>, GuardEntry, std::less<>> kGuards = {
      {{"", "Conv"}, {guardConv, true}},
      {{"", "ConvInteger"}, {guardConv, true}},
      {{"", "ConvTranspose"}, {guardConv, true}},
      {{"", "QLinearConv"}, {guardQLinearConv, true}},
      {{"", "MaxUnpool"}, {guardMaxUnpool, true}},
      {{"", "MaxRoiPool"}, {guardMaxRoiPool, true}},
      {{"", "STFT"}, {guardStft, true}},
      {{"", "LayerNormalization"}, {guardLayerNormalization, true}},
      {{"", "GatherND"}, {guardGatherNd, true}},
      {{"", "SplitToSequence"}, {guardSplitToSequence, true}},
      {{"", "Range"}, {guardRange, true}},
      {{"", "ConstantOfShape"}, {guardConstantOfShape, false}},
      {{"", "Expand"}, {guardExpand, false}},
      {{"", "EyeLike"}, {guardTypedInput, false}},
      {{"ai.onnx.ml", "CategoryMapper"}, {guardTypedInput, false}},
      {{"ai.onnx.ml", "DictVectorizer"}, {guardTypedInput, false}},
      {{"ai.onnx.ml", "LabelEncoder"}, {guardTypedInput, false}},
  };
  auto it = kGuards.find(std::pair(domain == "ai.onnx" ? std::string() : domain, op));
  return it == kGuards.end() ? nullptr : &it->second;
}

class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int maxInclusiveVersion,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
    if (!schema || !schema->has_type_and_shape_inference_function()) return schema;
    const GuardEntry* entry = guardFor(key, domain);
    if (!entry) return schema;
    const Guard guard = entry->guard;
    std::lock_guard lock(mutex_);
    auto& slot = copies_[schema];
    if (!slot) {
      auto copy = std::make_unique<onnx::OpSchema>(*schema);
      onnx::InferenceFunction inner = schema->GetTypeAndShapeInferenceFunction();
      copy->TypeAndShapeInferenceFunction([inner = std::move(inner), guard, key](InferenceContext& ctx) {
        guard(ctx, key);
        inner(ctx);
      });
      slot = std::move(copy);
    }
    return slot.get();
  }

 private:
  mutable std::mutex mutex_;
  /// Guarded copies, keyed by the registry's own schema (which lives as long as the program).
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> copies_;
};

}  // namespace

bool hasGuard(const std::string& op, const std::string& domain) {
  const GuardEntry* entry = guardFor(op, domain);
  return entry && entry->refuses;
}

bool isGuardRefusal(const std::exception& e, std::string* reason) {
  const std::string_view text = e.what();
  const size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return false;
  if (reason) {
    std::string_view rest = text.substr(at + kMarker.size());
    rest = rest.substr(0, rest.find('\n'));
    // "Conv: the input has rank ..." -> "the input has rank ..."
    if (const size_t colon = rest.find(": "); colon != std::string_view::npos) rest = rest.substr(colon + 2);
    *reason = std::string(rest);
  }
  return true;
}

void setTensorType(onnx::TypeProto* type, int32_t elemType, bool hasRank, const std::vector<int64_t>& dims) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(elemType);
  if (!hasRank) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

std::vector<onnx::TypeProto> inferNodeTypes(const onnx::OpSchema& schema, onnx::NodeProto& node,
                                            const InferenceTypes& types, const InferenceData& data) {
  const std::unordered_map<std::string, const onnx::SparseTensorProto*> noSparse;
  onnx::shape_inference::InferenceContextImpl ctx(node, types, data, noSparse, nullptr, nullptr);
  schema.GetTypeAndShapeInferenceFunction()(ctx);
  return std::move(ctx.allOutputTypes_);
}

const onnx::ISchemaRegistry* guardedSchemas() {
  static const GuardedRegistry registry;
  return &registry;
}

const onnx::OpSchema* guardedSchema(const std::string& op, int version, const std::string& domain) {
  return guardedSchemas()->GetSchema(op, version, domain);
}

}  // namespace partex::onnximp
