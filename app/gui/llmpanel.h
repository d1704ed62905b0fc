#pragma once
/// \file The LLM panel (issue 26, item 6, the GUI half of `partex-cli llm`): for a language model opened
/// from a GGUF file or a generated decoder (gen:llama, gen:moe) on a platform with a GPU, the fastest
/// placement of the job (a prompt of P tokens, then G generated tokens), its predicted prefill time and
/// decode tokens/s, llama.cpp's rules beside it at their best settings, and the llama.cpp arguments that
/// realise it, with a Copy button. Everything is computed by core's calls, the ones `partex-cli llm`
/// makes (problem/llmjob.h: loadLlmJobTables; sched/llmjob.h: LlmJob::make, evaluateLlmRules,
/// bestLlmJob, LlmJob::args), on a worker thread; the panel only formats them. The main window applies
/// the placement to the graph (llmPhasePlan on the opened table), so that the graph is coloured by it
/// and the memory view shows each device's memory (the GPU's VRAM, the host's) under it.

#include <QWidget>

#include <memory>
#include <string>
#include <vector>

#include "platform/platform.h"
#include "sched/llmjob.h"
#include "session/jobtracker.h"
#include "support/result.h"

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace partex::gui {

/// What the panel shows: core's results for one job, with the placement to apply.
struct LlmReport {
  std::string model;          ///< The job's model reference (llmModelRef).
  int64_t prompt = 0, generate = 0;
  int layers = 0;             ///< n_layer.
  bool experts = false;       ///< The model has routed experts.
  std::string gpu;            ///< The GPU's device id.
  DeviceId accel = -1;        ///< Its index in the platform.
  int64_t gpuCapacity = 0;    ///< Its memory, bytes (0: unlimited).
  LlmBestResult best;
  std::string args;           ///< llama.cpp's arguments for best.single (LlmJob::args).
  std::string prefillArgs, decodeArgs;  ///< For the per-phase pair, when best.twoPhase.
  std::vector<LlmRuleResult> rules;  ///< llama.cpp's rules at its default -ub 512.
  double bestRuleUs = 0;      ///< The fastest rule's job time (0 when no rule fits).
  int64_t ubatch = 512;       ///< best's -ub (searched with the placement; `args` carries it).
  double bestRuleAtUbatchUs = 0;  ///< The fastest rule at best's -ub when that is not 512 (else 0).
};

/// The reference `partex-cli llm` takes for the model a session opened: a GGUF file without its
/// "?phase=...&seq=..." options, a gen:llama or gen:moe reference without phase and seq (the job sets
/// them); "" for anything else (an ONNX file, another generator, a task graph).
std::string llmModelRef(const std::string& path);

/// The job on `platform` by core's calls, as `partex-cli llm` computes it without --ubatch (best searches
/// the micro-batch too; runs on a worker thread).
/// Errors are core's one-line messages (no GPU, no layer names, ...).
Result<LlmReport> analyseLlm(const std::string& model, const Platform& platform, int64_t prompt, int64_t generate,
                             double timeLimitSec);

/// See the file comment.
class LlmPanel : public QWidget {
  Q_OBJECT
 public:
  explicit LlmPanel(QWidget* parent = nullptr);
  ~LlmPanel() override;

  /// The model the session opened (its path or reference) on `platform`; clears the last report.
  /// Returns true when the model is one the panel can place (llmModelRef is not empty).
  bool setModel(const QString& path, const Platform& platform);
  /// Starts the analysis in the background (the Analyse button); finished() reports the end.
  void analyse();
  bool running() const { return jobs_.isRunning(); }
  /// The last report (null before one, or after an error).
  const LlmReport* report() const { return report_.get(); }
  /// The search's time limit in seconds (default 5).
  void setTimeLimit(double sec);
  void setPrompt(int tokens);
  void setGenerate(int tokens);

  QLineEdit* argsEdit() const { return args_; }
  QPushButton* copyButton() const { return copy_; }
  QPushButton* analyseButton() const { return analyse_; }
  QTableWidget* rulesTable() const { return rules_; }
  QLabel* summaryLabel() const { return summary_; }
  QLabel* statusLabel() const { return status_; }

 signals:
  /// The analysis ended: ok with a report, or not (the status label says why).
  void finished(bool ok);
  /// "Show on graph": apply the report's placement to the graph.
  void applyRequested();

 private:
  void showReport(const LlmReport& r);

  QLabel* status_ = nullptr;
  QSpinBox* prompt_ = nullptr;
  QSpinBox* generate_ = nullptr;
  QDoubleSpinBox* limit_ = nullptr;
  QPushButton* analyse_ = nullptr;
  QLabel* summary_ = nullptr;
  QLineEdit* args_ = nullptr;
  QPushButton* copy_ = nullptr;
  QPushButton* apply_ = nullptr;
  QLabel* twoPhase_ = nullptr;
  QTableWidget* rules_ = nullptr;
  std::string model_;  ///< llmModelRef of the opened model ("" when none).
  Platform platform_;
  std::unique_ptr<LlmReport> report_;
  JobTracker jobs_{this};
};

}  // namespace partex::gui
