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

// The IoU test in float without contracted multiply-adds: the same roundings in the scalar and the
// vector loop (and as ONNX Runtime's baseline x86-64 build makes them). Without -ftrapping-math, so that
// GCC computes the division of every lane (it traps on nothing here) and the loop vectorises.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off", "no-trapping-math")
#endif

/// Whether a box of corners (y1, x1, y2, x2) and area `area` has an IoU above `thr` with a kept box
/// (corners ky1.., area ka): ONNX Runtime's SuppressByIOU (no overlap, or a box of zero area, suppresses
/// nothing). std::max/min's own selects, so that NaN corners compare as there.
#define PARTEX_NMS_SUPPRESSES(KY1, KX1, KY2, KX2, KA)                                     \
  ({                                                                                      \
    const float iy1 = y1 < (KY1) ? (KY1) : y1, ix1 = x1 < (KX1) ? (KX1) : x1;             \
    const float iy2 = (KY2) < y2 ? (KY2) : y2, ix2 = (KX2) < x2 ? (KX2) : x2;             \
    const float dy = iy2 - iy1, dx = ix2 - ix1;                                           \
    const float inter = (0.0f < dy ? dy : 0.0f) * (0.0f < dx ? dx : 0.0f);                \
    const float uni = area + (KA) - inter;                                                \
    (inter > 0.0f) & (area > 0.0f) & ((KA) > 0.0f) & (uni > 0.0f) & (inter / uni > thr);  \
  })

/// Whether any of the n kept boxes (corners and areas as columns) suppresses the box: blocks of 64
/// tested at once (cloned for AVX-512 and AVX2), the first block with a hit ending the search. The same
/// answer as testing them one by one in order and stopping at the first (batched NMS keeps thousands of
/// boxes per class: SSDlite's NMS was 83% of its run, 3.5x ONNX Runtime's time).
[[gnu::target_clones("avx512f", "avx2", "default")]] bool anySuppresses(const float* ky1, const float* kx1,
                                                                        const float* ky2, const float* kx2,
                                                                        const float* ka, int64_t n, float y1, float x1,
                                                                        float y2, float x2, float area, float thr) {
  constexpr int64_t kBlock = 64;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t j = i; j < i + kBlock; ++j) hit |= PARTEX_NMS_SUPPRESSES(ky1[j], kx1[j], ky2[j], kx2[j], ka[j]) ? 1 : 0;
    if (hit) return true;
  }
  for (; i < n; ++i)
    if (PARTEX_NMS_SUPPRESSES(ky1[i], kx1[i], ky2[i], kx2[i], ka[i])) return true;
  return false;
}
#undef PARTEX_NMS_SUPPRESSES

/// A box's area as the test takes it.
float areaOf(const Box& b) { return (b.y2 - b.y1) * (b.x2 - b.x1); }

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/// The boxes kept so far for one class, as columns (anySuppresses reads them a vector at a time).
struct KeptBoxes {
  std::vector<float> y1, x1, y2, x2, area;
  void clear() {
    y1.clear();
    x1.clear();
    y2.clear();
    x2.clear();
    area.clear();
  }
  size_t size() const { return y1.size(); }
  void push(const Box& b, float a) {
    y1.push_back(b.y1);
    x1.push_back(b.x1);
    y2.push_back(b.y2);
    x2.push_back(b.x2);
    area.push_back(a);
  }
  bool suppress(const Box& b, float a, float thr) const {
    return anySuppresses(y1.data(), x1.data(), y2.data(), x2.data(), area.data(), static_cast<int64_t>(size()), b.y1,
                         b.x1, b.y2, b.x2, a, thr);
  }
};

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
    KeptBoxes kept;
    std::vector<Box> all(static_cast<size_t>(nBoxes));
    std::vector<float> areas(static_cast<size_t>(nBoxes));
    for (int64_t b = 0; b < batches && limit > 0; ++b) {
      for (int64_t i = 0; i < nBoxes; ++i)
      {
        all[static_cast<size_t>(i)] = corners(pb + (b * nBoxes + i) * 4, centerPoint_);
        areas[static_cast<size_t>(i)] = areaOf(all[static_cast<size_t>(i)]);
      }
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
          if (kept.suppress(box, areas[static_cast<size_t>(i)], iouThr)) continue;
          kept.push(box, areas[static_cast<size_t>(i)]);
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
