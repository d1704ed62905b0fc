// NonMaxSuppression (opset 10/11) in plain C++. Per batch and class: the boxes whose score is above
// score_threshold (when given), best score first (the lower box index first among equal scores), each kept
// unless its IoU with a box already kept is above iou_threshold, at most max_output_boxes_per_class of
// them. The rules where the specification is silent (strict comparisons, a box of zero area suppresses
// nothing, the tie order) follow ONNX Runtime's onnxruntime/core/providers/cpu/object_detection/
// non_max_suppression.cc, the yardstick.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/kernels.h"

namespace partex::cpu {

namespace {

struct Box {
  float y1, x1, y2, x2;
};

/// Corners with y1 <= y2 and x1 <= x2 from a stored box (corners in any order, or center and size).
Box corners(const float* b, bool centerPoint) {
  if (centerPoint) {
    const float xc = b[0], yc = b[1], w = b[2] / 2.0f, h = b[3] / 2.0f;
    return {yc - h, xc - w, yc + h, xc + w};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

bool suppresses(const Box& a, const Box& b, float iouThreshold) {
  const float iy1 = std::max(a.y1, b.y1), ix1 = std::max(a.x1, b.x1);
  const float iy2 = std::min(a.y2, b.y2), ix2 = std::min(a.x2, b.x2);
  const float inter = std::max(0.0f, iy2 - iy1) * std::max(0.0f, ix2 - ix1);
  if (inter <= 0.0f) return false;
  const float areaA = (a.y2 - a.y1) * (a.x2 - a.x1), areaB = (b.y2 - b.y1) * (b.x2 - b.x1);
  const float uni = areaA + areaB - inter;
  if (areaA <= 0.0f || areaB <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > iouThreshold;
}

class NmsKernel final : public OpKernel {
 public:
  explicit NmsKernel(const Node& n) : centerPoint_(n.attrInt("center_point_box", 0) != 0) {}

  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "boxes"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "scores"); !e.empty()) return Error{e};
    const Tensor& boxes = *in[0];
    const Tensor& scores = *in[1];
    if (boxes.dtype() != DType::Float32 || scores.dtype() != DType::Float32) return makeError("float32 only");
    if (boxes.rank() != 3 || boxes.dim(2) != 4)
      return makeError("boxes ", boxes.describe(), " is not [batch, boxes, 4]");
    if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
      return makeError("scores ", scores.describe(), " does not match boxes ", boxes.describe());
    auto scalar = [&](size_t i, const char* what, double& v) -> std::string {
      if (i >= in.size() || !in[i] || in[i]->empty()) return "absent";
      if (in[i]->numElements() != 1) return std::string(what) + " is not a scalar";
      v = in[i]->valueAsDouble(0);
      return "";
    };
    double maxOut = 0, iou = 0, scoreThr = 0;
    std::string e;
    if (e = scalar(2, "max_output_boxes_per_class", maxOut); !e.empty() && e != "absent") return Error{e};
    if (e = scalar(3, "iou_threshold", iou); !e.empty() && e != "absent") return Error{e};
    bool haveScoreThr = false;
    if (e = scalar(4, "score_threshold", scoreThr); e.empty())
      haveScoreThr = true;
    else if (e != "absent")
      return Error{e};
    const int64_t batches = boxes.dim(0), nBoxes = boxes.dim(1), classes = scores.dim(1);
    // Clamped to the box count before the cast: exporters write INT64_MAX ("no limit", torchvision's
    // batched NMS), which as a double is outside int64's range (the cast was undefined and kept nothing).
    const int64_t limit =
        static_cast<int64_t>(std::clamp(maxOut, 0.0, static_cast<double>(std::max<int64_t>(nBoxes, 0))));
    const float iouThr = static_cast<float>(iou), scoreT = static_cast<float>(scoreThr);
    const float* pb = static_cast<const float*>(boxes.raw());
    const float* ps = static_cast<const float*>(scores.raw());
    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<int64_t> cand;
    std::vector<Box> kept;
    std::vector<Box> all(static_cast<size_t>(nBoxes));
    for (int64_t b = 0; b < batches && limit > 0; ++b) {
      for (int64_t i = 0; i < nBoxes; ++i)
        all[static_cast<size_t>(i)] = corners(pb + (b * nBoxes + i) * 4, centerPoint_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = ps + (b * classes + c) * nBoxes;
        cand.clear();
        for (int64_t i = 0; i < nBoxes; ++i)
          if (!haveScoreThr || s[i] > scoreT) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
        kept.clear();
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= limit) break;
          const Box& box = all[static_cast<size_t>(i)];
          bool drop = false;
          for (const Box& k : kept)
            if (suppresses(box, k, iouThr)) {
              drop = true;
              break;
            }
          if (drop) continue;
          kept.push_back(box);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Int64, {static_cast<int64_t>(selected.size() / 3), 3}); !s) return s;
    std::copy(selected.begin(), selected.end(), static_cast<int64_t*>(out[0].raw()));
    return Status::ok();
  }

 private:
  bool centerPoint_;
};

}  // namespace

void addNmsOps(std::vector<OpEntry>& t) {
  t.push_back({"NonMaxSuppression",
               [](const Graph& g, const Node& n) -> std::string {
                 if (inDType(g, n, 0) != DType::Float32 || inDType(g, n, 1) != DType::Float32)
                   return "boxes and scores must be float32";
                 for (size_t i = 2; i < 5; ++i)
                   if (hasIn(n, i) && inDType(g, n, i) != (i == 2 ? DType::Int64 : DType::Float32))
                     return "input " + std::to_string(i) + " has dtype " + dtypeName(inDType(g, n, i));
                 return "";
               },
               [](const Graph&, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 return std::unique_ptr<OpKernel>(std::make_unique<NmsKernel>(n));
               }});
}

}  // namespace partex::cpu
