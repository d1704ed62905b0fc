#include "gguf/ggufwriter.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace partex {

namespace {

template <typename T>
void put(std::string& out, T v) {
  uint64_t x = 0;
  if constexpr (std::is_floating_point_v<T>) {
    uint32_t u;
    static_assert(sizeof(T) == 4);
    std::memcpy(&u, &v, 4);
    x = u;
  } else {
    x = static_cast<uint64_t>(v);
  }
  for (size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((x >> (8 * i)) & 0xFF);
}

void putString(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

std::string entry(const std::string& key, uint32_t type) {
  std::string e;
  putString(e, key);
  put<uint32_t>(e, type);
  return e;
}

}  // namespace

void GgufWriter::setU32(const std::string& key, uint32_t v) {
  std::string e = entry(key, 4);
  put(e, v);
  kv_.push_back(e);
  if (key == "general.alignment") alignment_ = v;
}
void GgufWriter::setU64(const std::string& key, uint64_t v) {
  std::string e = entry(key, 10);
  put(e, v);
  kv_.push_back(e);
}
void GgufWriter::setI32(const std::string& key, int32_t v) {
  std::string e = entry(key, 5);
  put(e, v);
  kv_.push_back(e);
}
void GgufWriter::setF32(const std::string& key, float v) {
  std::string e = entry(key, 6);
  put(e, v);
  kv_.push_back(e);
}
void GgufWriter::setBool(const std::string& key, bool v) {
  std::string e = entry(key, 7);
  put<uint8_t>(e, v ? 1 : 0);
  kv_.push_back(e);
}
void GgufWriter::setString(const std::string& key, const std::string& v) {
  std::string e = entry(key, 8);
  putString(e, v);
  kv_.push_back(e);
}
void GgufWriter::setStringArray(const std::string& key, uint64_t count) {
  std::string e = entry(key, 9);
  put<uint32_t>(e, 8);
  put<uint64_t>(e, count);
  for (uint64_t i = 0; i < count; ++i) putString(e, "t" + std::to_string(i));
  kv_.push_back(e);
}
void GgufWriter::setI32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::string e = entry(key, 9);
  put<uint32_t>(e, 5);
  put<uint64_t>(e, v.size());
  for (int32_t x : v) put(e, x);
  kv_.push_back(e);
}

void GgufWriter::addTensor(const std::string& name, const std::vector<int64_t>& ne, QuantType t) {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  tensors_.push_back({name, ne, t, next_});
  const auto bytes = static_cast<uint64_t>(quantBytes(t, n));
  next_ += (bytes + alignment_ - 1) / alignment_ * alignment_;
}

std::string GgufWriter::header(uint32_t version) const {
  std::string h = "GGUF";
  put<uint32_t>(h, version);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, kv_.size());
  for (const auto& e : kv_) h += e;
  for (const auto& t : tensors_) {
    putString(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<int64_t>(h, d);
    put<uint32_t>(h, static_cast<uint32_t>(static_cast<int16_t>(t.type)));
    put<uint64_t>(h, t.offset);
  }
  while (h.size() % alignment_ != 0) h += '\0';
  return h;
}

uint64_t GgufWriter::dataBytes() const {
  return next_;
}

Status GgufWriter::write(const std::string& path, uint32_t version) const {
  const std::string h = header(version);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return makeError(path, ": cannot write");
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    if (!out) return makeError(path, ": cannot write");
  }
  std::error_code ec;
  std::filesystem::resize_file(path, h.size() + next_, ec);
  if (ec) return makeError(path, ": cannot extend to ", std::to_string(h.size() + next_), " bytes (", ec.message(), ")");
  return Status::ok();
}

GgufWriter ggufForSpec(const GenSpec& s, const std::string& arch, QuantType mat, QuantType exps) {
  GgufWriter w;
  if (exps == QuantType::None) exps = mat;
  const int64_t H = s.hidden, heads = s.heads, kv = s.kvHeads > 0 ? s.kvHeads : s.heads;
  const int64_t hd = s.headDim > 0 ? s.headDim : H / heads;
  const int64_t ffn = s.intermediate > 0 ? s.intermediate : llamaIntermediate(H);
  const int64_t vocab = s.vocab > 0 ? s.vocab : 32000;
  w.setString("general.architecture", arch);
  w.setString("general.name", "partex-test");
  w.setU32("general.alignment", 32);
  w.setU32(arch + ".block_count", static_cast<uint32_t>(s.layers));
  w.setU32(arch + ".context_length", 4096);
  w.setU32(arch + ".embedding_length", static_cast<uint32_t>(H));
  w.setU32(arch + ".feed_forward_length", static_cast<uint32_t>(ffn));
  w.setU32(arch + ".attention.head_count", static_cast<uint32_t>(heads));
  w.setU32(arch + ".attention.head_count_kv", static_cast<uint32_t>(kv));
  w.setU32(arch + ".attention.key_length", static_cast<uint32_t>(hd));
  w.setU32(arch + ".attention.value_length", static_cast<uint32_t>(hd));
  w.setF32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.setF32(arch + ".rope.freq_base", 10000.0f);
  if (s.experts > 0) {
    w.setU32(arch + ".expert_count", static_cast<uint32_t>(s.experts));
    w.setU32(arch + ".expert_used_count", static_cast<uint32_t>(s.expertsUsed));
    w.setU32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(s.expertFfn > 0 ? s.expertFfn : ffn));
  }
  if (s.slidingWindow > 0) w.setU32(arch + ".attention.sliding_window", static_cast<uint32_t>(s.slidingWindow));
  w.setString("tokenizer.ggml.model", "gpt2");
  w.setStringArray("tokenizer.ggml.tokens", static_cast<uint64_t>(vocab));
  w.setI32("tokenizer.ggml.bos_token_id", 1);

  w.addTensor("token_embd.weight", {H, vocab}, mat);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    w.addTensor(b + "attn_norm.weight", {H}, QuantType::F32);
    w.addTensor(b + "attn_q.weight", {H, heads * hd}, mat);
    w.addTensor(b + "attn_k.weight", {H, kv * hd}, mat);
    w.addTensor(b + "attn_v.weight", {H, kv * hd}, mat);
    w.addTensor(b + "attn_output.weight", {heads * hd, H}, mat);
    w.addTensor(b + (s.postAttentionNormName ? "post_attention_norm.weight" : "ffn_norm.weight"), {H}, QuantType::F32);
    if (s.experts > 0) {
      const int64_t fe = s.expertFfn > 0 ? s.expertFfn : ffn;
      w.addTensor(b + "ffn_gate_inp.weight", {H, s.experts}, QuantType::F32);
      w.addTensor(b + "ffn_gate_exps.weight", {H, fe, s.experts}, exps);
      w.addTensor(b + "ffn_up_exps.weight", {H, fe, s.experts}, exps);
      w.addTensor(b + "ffn_down_exps.weight", {fe, H, s.experts}, exps);
      if (s.sharedFfn > 0) {
        w.addTensor(b + "ffn_gate_shexp.weight", {H, s.sharedFfn}, mat);
        w.addTensor(b + "ffn_up_shexp.weight", {H, s.sharedFfn}, mat);
        w.addTensor(b + "ffn_down_shexp.weight", {s.sharedFfn, H}, mat);
      }
    } else {
      w.addTensor(b + "ffn_gate.weight", {H, ffn}, mat);
      w.addTensor(b + "ffn_up.weight", {H, ffn}, mat);
      w.addTensor(b + "ffn_down.weight", {ffn, H}, mat);
    }
  }
  w.addTensor("output_norm.weight", {H}, QuantType::F32);
  if (!s.tiedEmbeddings) w.addTensor("output.weight", {H, vocab}, mat);
  return w;
}

}  // namespace partex
