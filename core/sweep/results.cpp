#include "sweep/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/files.h"

#ifndef PARTEX_VERSION
#define PARTEX_VERSION "unknown"
#endif

namespace partex {

using nlohmann::json;

std::string partexVersion() {
  return PARTEX_VERSION;
}

std::string rowToJson(const SweepRow& r) {
  json j = {{"case", r.key},
            {"index", r.index},
            {"model", r.model},
            {"dims", r.dims},
            {"platform", r.platform},
            {"bw_scale", r.bandwidthScale},
            {"lat_scale", r.latencyScale},
            {"algorithm", r.algorithm},
            {"time_limit_s", r.timeLimitSec},
            {"tasks", r.tasks},
            {"edges", r.edges},
            {"devices", r.devices},
            {"profiles", r.profiles},
            {"valid", r.valid},
            {"makespan_us", r.makespanUs},
            {"lower_bound_us", r.lowerBoundUs},
            {"ratio_to_lower_bound", r.ratioToBound},
            {"best_single_us", r.bestSingleUs},
            {"speedup", r.speedup},
            {"transfers", r.transfers},
            {"bytes_moved", r.bytesMoved},
            {"peak_device_bytes", r.peakDeviceBytes},
            {"over_capacity", r.overCapacity},
            {"sched_ms", r.schedMs},
            {"time_limited", r.timeLimited},
            {"optimal", r.optimal},
            {"error", r.error},
            {"version", r.version},
            {"model_sha256", r.modelSha256},
            {"platform_sha256", r.platformSha256},
            {"inputs_sha256", r.inputsSha256},
            {"objective", r.objective},
            {"period_us", r.periodUs},
            {"stream_latency_us", r.streamLatencyUs}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<SweepRow> rowFromJson(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    return makeError("not JSON (", e.what(), ")");
  }
  if (!j.is_object()) return makeError("not a JSON object");
  SweepRow r;
  try {
    r.key = j.at("case").get<std::string>();
    r.index = j.value("index", size_t{0});
    r.model = j.value("model", "");
    r.dims = j.value("dims", "");
    r.platform = j.value("platform", "");
    r.bandwidthScale = j.value("bw_scale", 1.0);
    r.latencyScale = j.value("lat_scale", 1.0);
    r.algorithm = j.value("algorithm", "");
    r.timeLimitSec = j.value("time_limit_s", 0.0);
    r.tasks = j.value("tasks", 0);
    r.edges = j.value("edges", 0);
    r.devices = j.value("devices", 0);
    r.profiles = j.value("profiles", 0);
    r.valid = j.at("valid").get<bool>();
    r.makespanUs = j.value("makespan_us", 0.0);
    r.lowerBoundUs = j.value("lower_bound_us", 0.0);
    r.ratioToBound = j.value("ratio_to_lower_bound", 0.0);
    r.bestSingleUs = j.value("best_single_us", 0.0);
    r.speedup = j.value("speedup", 0.0);
    r.transfers = j.value("transfers", int64_t{0});
    r.bytesMoved = j.value("bytes_moved", int64_t{0});
    r.peakDeviceBytes = j.value("peak_device_bytes", int64_t{0});
    r.overCapacity = j.value("over_capacity", false);
    r.schedMs = j.value("sched_ms", 0.0);
    r.timeLimited = j.value("time_limited", false);
    r.optimal = j.value("optimal", false);
    r.error = j.value("error", "");
    r.version = j.at("version").get<std::string>();
    r.modelSha256 = j.value("model_sha256", "");
    r.objective = j.value("objective", "latency");
    r.periodUs = j.value("period_us", 0.0);
    r.streamLatencyUs = j.value("stream_latency_us", 0.0);
    r.platformSha256 = j.value("platform_sha256", "");
    r.inputsSha256 = j.at("inputs_sha256").get<std::string>();
  } catch (const json::exception& e) {
    return makeError("not a results row (", e.what(), ")");
  }
  return r;
}

namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

}  // namespace

std::string csvHeader() {
  return "case,index,model,dims,platform,bw_scale,lat_scale,algorithm,time_limit_s,tasks,edges,devices,profiles,valid,"
         "makespan_us,lower_bound_us,ratio_to_lower_bound,best_single_us,speedup,transfers,bytes_moved,peak_device_"
         "bytes,"
         "over_capacity,sched_ms,time_limited,optimal,error,version,model_sha256,platform_sha256,inputs_sha256,"
         "objective,period_us,stream_latency_us";
}

std::string rowToCsv(const SweepRow& r) {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  const std::vector<std::string> f = {csvField(r.key),
                                      std::to_string(r.index),
                                      csvField(r.model),
                                      csvField(r.dims),
                                      csvField(r.platform),
                                      num(r.bandwidthScale),
                                      num(r.latencyScale),
                                      csvField(r.algorithm),
                                      num(r.timeLimitSec),
                                      std::to_string(r.tasks),
                                      std::to_string(r.edges),
                                      std::to_string(r.devices),
                                      std::to_string(r.profiles),
                                      b(r.valid),
                                      num(r.makespanUs),
                                      num(r.lowerBoundUs),
                                      num(r.ratioToBound),
                                      num(r.bestSingleUs),
                                      num(r.speedup),
                                      std::to_string(r.transfers),
                                      std::to_string(r.bytesMoved),
                                      std::to_string(r.peakDeviceBytes),
                                      b(r.overCapacity),
                                      num(r.schedMs),
                                      b(r.timeLimited),
                                      b(r.optimal),
                                      csvField(r.error),
                                      csvField(r.version),
                                      r.modelSha256,
                                      r.platformSha256,
                                      r.inputsSha256,
                                      csvField(r.objective),
                                      num(r.periodUs),
                                      num(r.streamLatencyUs)};
  std::string s;
  for (size_t i = 0; i < f.size(); ++i) s += (i ? "," : "") + f[i];
  return s;
}

std::vector<std::string> timingColumns() {
  return {"sched_ms", "time_limited"};
}

Result<std::vector<SweepRow>> readResults(const std::string& path, std::vector<std::string>* notes) {
  std::vector<SweepRow> rows;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return rows;
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  size_t pos = 0, lineNo = 0;
  while (pos < text->size()) {
    ++lineNo;
    const size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) {  // a write cut short: the case counts as not done
      if (notes)
        notes->push_back(path + ": line " + std::to_string(lineNo) +
                         " is cut short (an interrupted write); it is ignored and its case runs again");
      break;
    }
    const std::string line = text->substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    auto r = rowFromJson(line);
    if (!r) {
      if (notes) notes->push_back(path + ": line " + std::to_string(lineNo) + " ignored: " + r.message());
      continue;
    }
    rows.push_back(std::move(r).value());
  }
  return rows;
}

ResultsAppender::~ResultsAppender() {
  if (fd_ >= 0) ::close(fd_);
}

Status ResultsAppender::open(const std::string& path, std::vector<std::string>* notes) {
  path_ = path;
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return makeError(path, ": cannot create its folder: ", ec.message());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return makeError(path, ": cannot open for writing: ", std::strerror(errno));
  // Remove a cut last line (a crash mid-write), so that the next line starts on a line of its own.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    std::string text;
    text.resize(static_cast<size_t>(st.st_size));
    if (::pread(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) && text.back() != '\n') {
      const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0)
        return makeError(path, ": cannot remove its cut last line: ", std::strerror(errno));
      if (notes) notes->push_back(path + ": removed a cut last line (an interrupted write)");
    }
  }
  return Status::ok();
}

Status ResultsAppender::append(const SweepRow& r) {
  if (fd_ < 0) return makeError(path_, ": not open");
  const std::string line = rowToJson(r) + "\n";
  // One write of the whole line (O_APPEND): a reader never sees two cases' bytes interleaved.
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return makeError(path_, ": write failed: ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace partex
