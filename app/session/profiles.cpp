#include "session/profiles.h"

#include <QFileInfo>

#include "profile/ortprofile.h"
#include "support/strings.h"

namespace partex::gui {

static std::string fileNameOf(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).fileName().toStdString();
}

static std::string absolutePath(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).absoluteFilePath().toStdString();
}

std::string LoadedProfile::fileName() const {
  return fileNameOf(path);
}

std::vector<std::string> LoadedProfile::deviceIds() const {
  std::vector<std::string> ids;
  for (const auto& d : profile.devices) ids.push_back(d.id);
  return ids;
}

Result<LoadedProfile> readProfile(const std::string& path) {
  auto p = loadProfileFile(path);
  if (!p) return Error{p.message()};
  LoadedProfile lp;
  lp.kind = LoadedProfile::Kind::Partex;
  lp.path = absolutePath(path);
  lp.profile = std::move(p).value();
  return lp;
}

Result<LoadedProfile> readOrtImport(const std::string& path, const std::string& device, const std::string& provider) {
  if (device.empty()) return makeError(fileNameOf(path), ": name the device the ONNX Runtime times were measured on");
  auto p = loadOrtProfileFile(path, device, provider);
  if (!p) return Error{p.message()};
  LoadedProfile lp;
  lp.kind = LoadedProfile::Kind::OrtImport;
  lp.path = absolutePath(path);
  lp.profile = std::move(p).value();
  lp.device = device;
  lp.provider = provider;
  return lp;
}

Result<ApplyReport> applyLoadedProfile(CostTable& t, const LoadedProfile& p, const LoadedModel& model) {
  // The rule is core's (profile/profile.h), as in partex-cli's --profile and --import-ort.
  return applyCostSource(t, p.profile, p.kind != LoadedProfile::Kind::Partex, fileNameOf(model.path),
                         model.graph.graphSha256, p.fileName());
}

std::vector<LoadedProfile> applyProfiles(CostTable& t, const std::vector<LoadedProfile>& profiles,
                                         const LoadedModel& model, std::vector<std::string>* warnings) {
  std::vector<LoadedProfile> applied;
  for (const auto& p : profiles) {
    // On a copy: a refused profile may have changed part of the table before the refusal.
    CostTable trial = t;
    auto r = applyLoadedProfile(trial, p, model);
    if (!r) {
      if (warnings) warnings->push_back("profile " + p.fileName() + " left out: " + r.message());
      continue;
    }
    t = std::move(trial);
    applied.push_back(p);
    applied.back().report = std::move(r).value();
  }
  return applied;
}

std::string applySummary(const LoadedProfile& p) {
  const ApplyReport& r = p.report;
  std::string s =
      p.fileName() + ": " + std::to_string(r.opsApplied) + " operator times applied on " + join(p.deviceIds(), ", ");
  if (r.groupsApplied) s += ", " + std::to_string(r.groupsApplied) + " group times";
  if (r.pairsApplied) s += ", " + std::to_string(r.pairsApplied) + " transfer models";
  if (!r.unmatchedProfileOps.empty())
    s += "; " + std::to_string(r.unmatchedProfileOps.size()) + " profiled operators are not in the model";
  if (!r.unprofiledOps.empty())
    s += "; " + std::to_string(r.unprofiledOps.size()) + " operator/device pairs keep their modelled cost";
  if (!r.typeMismatches.empty()) s += "; op types differ for " + std::to_string(r.typeMismatches.size());
  return s;
}

CostCounts countCosts(const CostTable& t) {
  CostCounts c;
  for (size_t i = 0; i < t.cost.size() && i < t.provenance.size(); ++i) {
    if (!(t.cost[i] < kInf)) continue;
    switch (t.provenance[i]) {
      case Provenance::Measured:
        ++c.measured;
        break;
      case Provenance::Imported:
        ++c.imported;
        break;
      case Provenance::Modelled:
        ++c.modelled;
        break;
    }
  }
  return c;
}

}  // namespace partex::gui
