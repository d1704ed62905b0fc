#include "cuda/cuda_program.h"

#include <algorithm>

#include "cuda/cuda_pool.h"

namespace partex::cuda {

Program::~Program() = default;

Result<std::unique_ptr<Program>> Program::build(const Graph& g, const std::vector<OpId>& ops, const LeafFn& leaf) {
  auto ctxr = Context::get();
  if (!ctxr) return Error{ctxr.message()};
  Context& ctx = **ctxr;
  auto lock = ctx.lock();
  std::unique_ptr<Program> p(new Program());
  p->g_ = &g;
  p->ctx_ = &ctx;
  // Placement for gpuChain: 0 inside the program, 1 outside, so that chains never leave it.
  std::vector<int> place(g.nodes.size(), 1);
  for (OpId op : ops) {
    if (op < 0 || op >= static_cast<OpId>(g.nodes.size())) return makeError("cuda program: no operator ", std::to_string(op));
    place[static_cast<size_t>(op)] = 0;
  }
  for (const auto& chain : gpuChains(g, ops)) {
    auto k = makeGpuOp(ctx, g, chain, leaf);
    if (!k) return Error{k.message()};
    p->ops_.push_back(std::move(*k));
  }
  // Storage: one buffer per value read or written (views alias their source); leaves uploaded now.
  p->values_.resize(g.values.size());
  p->buffers_.resize(g.values.size());
  std::vector<char> has(g.values.size(), 0), written(g.values.size(), 0);
  auto alloc = [&](ValueId v) -> Status {
    const Value& val = g.values[static_cast<size_t>(v)];
    DevTensor& d = p->values_[static_cast<size_t>(v)];
    d.dtype = val.dtype;
    d.shape = val.shape;
    if (auto st = p->buffers_[static_cast<size_t>(v)].ensure(static_cast<size_t>(std::max<int64_t>(d.bytes(), 1))); !st)
      return makeError("cuda program: value '", val.name, "': ", st.message());
    d.ptr = p->buffers_[static_cast<size_t>(v)].get();
    p->deviceBytes_ += static_cast<int64_t>(p->buffers_[static_cast<size_t>(v)].bytes());
    has[static_cast<size_t>(v)] = 1;
    return {};
  };
  for (const auto& k : p->ops_) {
    for (ValueId v : k->reads()) {
      if (has[static_cast<size_t>(v)]) continue;
      if (auto st = alloc(v); !st) return Error{st.message()};
      p->inputs_.push_back(v);
      const Value& val = g.values[static_cast<size_t>(v)];
      if (val.isWeight || val.isGraphInput) {
        auto t = leaf(v);
        if (!t) return Error{t.message()};
        const Tensor& h = **t;
        if (h.dtype() != val.dtype || h.shape() != val.shape)
          return makeError("cuda program: value '", val.name, "': leaf tensor ", h.describe(), " does not match");
        Tensor plain;
        const Tensor* src = &h;
        if (h.nhwc()) {
          if (auto st = h.toPlain(plain); !st) return Error{st.message()};
          src = &plain;
        }
        if (auto st = p->buffers_[static_cast<size_t>(v)].upload(src->raw(), static_cast<size_t>(src->bytes()), ctx.stream()); !st)
          return makeError("cuda program: value '", val.name, "': ", st.message());
      }
    }
    for (size_t i = 0; i < k->writes().size(); ++i) {
      const ValueId v = k->writes()[i];
      written[static_cast<size_t>(v)] = 1;
      if (has[static_cast<size_t>(v)]) continue;
      if (k->isView()) {
        DevTensor& d = p->values_[static_cast<size_t>(v)];
        d = p->values_[static_cast<size_t>(k->reads()[0])];
        d.dtype = g.values[static_cast<size_t>(v)].dtype;
        d.shape = g.values[static_cast<size_t>(v)].shape;
        has[static_cast<size_t>(v)] = 1;
        continue;
      }
      if (auto st = alloc(v); !st) return Error{st.message()};
    }
    p->deviceBytes_ += k->ownedBytes();
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!written[v]) continue;
    bool out = g.values[v].isGraphOutput;
    for (OpId c : g.values[v].consumers) out = out || place[static_cast<size_t>(c)] != 0;
    if (out) p->outputs_.push_back(static_cast<ValueId>(v));
  }
  if (auto st = check(cudaStreamSynchronize(ctx.stream()), "cuda program: prepare"); !st) return Error{st.message()};
  return p;
}

int Program::launches() const {
  int n = 0;
  for (const auto& k : ops_) n += k->isView() ? 0 : 1;
  return n;
}

Status Program::launchAll() {
  for (const auto& k : ops_)
    if (auto st = k->launch(*ctx_, values_); !st) return st;
  return {};
}

Status Program::setInput(ValueId v, const Tensor& t) {
  if (v < 0 || static_cast<size_t>(v) >= values_.size() || !values_[static_cast<size_t>(v)].ptr)
    return makeError("cuda program: value ", std::to_string(v), " is not held by the program");
  const DevTensor& d = values_[static_cast<size_t>(v)];
  if (t.dtype() != d.dtype || t.shape() != d.shape)
    return makeError("cuda program: input '", g_->values[static_cast<size_t>(v)].name, "': got ", t.describe(), ", expected ",
                     dtypeName(d.dtype), shapeString(d.shape));
  auto lock = ctx_->lock();
  if (auto st = uploadTensor(*ctx_, staging_, t, d); !st) return makeError("cuda program: ", st.message());
  return {};
}

Status Program::run(bool graph) {
  auto lock = ctx_->lock();
  if (graph && !captured_.ready()) {
    // One eager run first: libraries load their kernels lazily, which must not happen under capture.
    if (auto st = launchAll(); !st) return st;
    if (auto st = check(cudaStreamSynchronize(ctx_->stream()), "cuda program: warm-up run"); !st) return st;
    if (auto st = captured_.capture(ctx_->stream(), [&] { return launchAll(); }); !st)
      return makeError("cuda program: ", st.message());
  }
  if (graph) {
    if (auto st = captured_.replay(ctx_->stream()); !st) return st;
  } else if (auto st = launchAll(); !st) {
    return st;
  }
  return check(cudaStreamSynchronize(ctx_->stream()), "cuda program: run");
}

Status Program::output(ValueId v, Tensor& out) {
  if (v < 0 || static_cast<size_t>(v) >= values_.size() || !values_[static_cast<size_t>(v)].ptr)
    return makeError("cuda program: value ", std::to_string(v), " is not held by the program");
  auto lock = ctx_->lock();
  if (auto st = downloadTensor(*ctx_, staging_, values_[static_cast<size_t>(v)], out); !st)
    return makeError("cuda program: ", st.message());
  return {};
}

Result<std::vector<Program::OpTime>> Program::timeOps(int warmup, int reps) {
  auto lock = ctx_->lock();
  cudaStream_t s = ctx_->stream();
  for (int i = 0; i < warmup; ++i)
    if (auto st = launchAll(); !st) return Error{st.message()};
  std::vector<cudaEvent_t> ev(ops_.size() + 1, nullptr);
  for (auto& e : ev)
    if (auto st = check(cudaEventCreate(&e), "cudaEventCreate"); !st) return Error{st.message()};
  std::vector<std::vector<double>> samples(ops_.size());
  Status st;
  for (int r = 0; r < reps && st; ++r) {
    // The GPU waits while the host queues every launch and event: the events then time the kernels.
    st = check(gpuBusyWait(static_cast<int64_t>(60000) * static_cast<int64_t>(ops_.size() + 10), s), "busy wait");
    for (size_t i = 0; i < ops_.size() && st; ++i) {
      st = check(cudaEventRecord(ev[i], s), "cudaEventRecord");
      if (st) st = ops_[i]->launch(*ctx_, values_);
    }
    if (st) st = check(cudaEventRecord(ev[ops_.size()], s), "cudaEventRecord");
    if (st) st = check(cudaStreamSynchronize(s), "timed run");
    for (size_t i = 0; i < ops_.size() && st; ++i) {
      float ms = 0;
      st = check(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]), "cudaEventElapsedTime");
      samples[i].push_back(ms * 1000.0);
    }
  }
  for (auto e : ev)
    if (e) (void)cudaEventDestroy(e);
  if (!st) return Error{st.message()};
  std::vector<OpTime> out;
  for (size_t i = 0; i < ops_.size(); ++i) {
    auto& v = samples[i];
    std::sort(v.begin(), v.end());
    out.push_back({ops_[i]->ops(), ops_[i]->name(), v.empty() ? 0.0 : v[v.size() / 2]});
  }
  return out;
}

}  // namespace partex::cuda
