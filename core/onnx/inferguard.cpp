#include "onnx/inferguard.h"

#include <onnx/defs/shape_inference.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

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

/// Starts the text of every refusal, so that callers can tell them from ONNX's own errors.
constexpr std::string_view kMarker = "partex-guard: ";

[[noreturn]] void refuse(const std::string& op, const std::string& why) {
  fail_shape_inference(kMarker, op, ": ", why);
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

void guardConv(const InferenceContext& ctx, const std::string& op) { checkConvRanks(ctx, op, 0, 1); }
void guardQLinearConv(const InferenceContext& ctx, const std::string& op) { checkConvRanks(ctx, op, 0, 3); }

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

Guard guardFor(const std::string& op, const std::string& domain) {
  if (!(domain.empty() || domain == "ai.onnx")) return nullptr;
  static const std::map<std::string, Guard, std::less<>> kGuards = {
      {"Conv", guardConv},          {"ConvInteger", guardConv},       {"ConvTranspose", guardConv},
      {"QLinearConv", guardQLinearConv}, {"MaxUnpool", guardMaxUnpool}, {"MaxRoiPool", guardMaxRoiPool},
  };
  auto it = kGuards.find(op);
  return it == kGuards.end() ? nullptr : it->second;
}

class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int maxInclusiveVersion,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
    if (!schema || !schema->has_type_and_shape_inference_function()) return schema;
    const Guard guard = guardFor(key, domain);
    if (!guard) return schema;
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

bool hasGuard(const std::string& op, const std::string& domain) { return guardFor(op, domain) != nullptr; }

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

const onnx::ISchemaRegistry* guardedSchemas() {
  static const GuardedRegistry registry;
  return &registry;
}

const onnx::OpSchema* guardedSchema(const std::string& op, int version, const std::string& domain) {
  return guardedSchemas()->GetSchema(op, version, domain);
}

}  // namespace partex::onnximp
