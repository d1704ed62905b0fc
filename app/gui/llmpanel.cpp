#include "gui/llmpanel.h"

#include <QApplication>
#include <QClipboard>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cstdio>

#include "gguf/gguf.h"
#include "problem/llmjob.h"
#include "support/strings.h"

namespace partex::gui {

std::string llmModelRef(const std::string& path) {
  const size_t q = path.find('?');
  const std::string base = path.substr(0, q);
  if (isGgufRef(base)) return base;
  if (base != "gen:llama" && base != "gen:moe") return {};
  // The job builds each phase at its own length: drop the opened phase and length, keep the rest.
  std::vector<std::string> keep;
  if (q != std::string::npos) {
    for (const std::string& kv : split(path.substr(q + 1), '&')) {
      const std::string key = kv.substr(0, kv.find('='));
      if (!kv.empty() && key != "phase" && key != "seq") keep.push_back(kv);
    }
  }
  return keep.empty() ? base : base + "?" + join(keep, "&");
}

Result<LlmReport> analyseLlm(const std::string& model, const Platform& platform, int64_t prompt, int64_t generate,
                             double timeLimitSec) {
  // The calls of `partex-cli llm` (app/cli/cmd_llm.cpp) without --ubatch, in its order: best searches
  // llama.cpp's micro-batch with the placement, the rules keep llama.cpp's -ub 512.
  constexpr int64_t kRuleUbatch = 512;
  LlmJobSpec spec;
  spec.model = model;
  spec.prompt = prompt;
  spec.generate = generate;
  spec.ubatches = llmUbatchCandidates(prompt);
  auto tables = loadLlmJobTables(spec, platform);
  if (!tables) return Error{tables.message()};
  auto search = bestLlmJobOverUbatch(*tables, spec.ubatches, kRuleUbatch, timeLimitSec);
  if (!search) return makeError(model, ": ", search.message());
  const LlmJob& job = search->jobs[search->bestJob];
  LlmReport r;
  r.model = model;
  r.prompt = job.tables().prompt;
  r.generate = job.tables().generate;
  r.layers = job.tensors().layers;
  r.experts = job.tensors().experts;
  r.ubatch = job.ubatch();
  const CostTable& t = job.argTable();
  r.accel = job.accel();
  r.gpu = t.deviceIds[static_cast<size_t>(r.accel)];
  r.gpuCapacity = t.memCapacity.empty() ? 0 : t.memCapacity[static_cast<size_t>(r.accel)];
  LlmBestResult& best = search->best[search->bestJob];
  r.args = job.args(best.single).text;
  if (best.twoPhase) {
    r.prefillArgs = job.args(best.prefill).text;
    r.decodeArgs = job.args(best.decode).text;
  }
  auto fastest = [](const std::vector<LlmRuleResult>& rules) {
    double us = 0;
    for (const auto& x : rules)
      if (x.ok && (us == 0 || x.time.jobUs < us)) us = x.time.jobUs;
    return us;
  };
  r.rules = std::move(search->rules[search->defaultJob]);
  r.bestRuleUs = fastest(r.rules);
  if (search->bestJob != search->defaultJob) r.bestRuleAtUbatchUs = fastest(search->rules[search->bestJob]);
  r.best = std::move(best);
  return r;
}

namespace {

QString num(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return QString::fromLatin1(b);
}
QString gib(int64_t bytes) { return num("%.1f GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

LlmPanel::LlmPanel(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("llmStatus"));
  status_->setWordWrap(true);
  l->addWidget(status_);
  auto* form = new QFormLayout;
  prompt_ = new QSpinBox(this);
  prompt_->setRange(1, 1 << 20);
  prompt_->setValue(2048);
  prompt_->setToolTip(tr("Prompt tokens: one prefill (partex-cli llm --prompt)"));
  generate_ = new QSpinBox(this);
  generate_->setRange(1, 1 << 16);
  generate_->setValue(256);
  generate_->setToolTip(tr("Generated tokens: decode steps over a growing cache (--generate)"));
  limit_ = new QDoubleSpinBox(this);
  limit_->setRange(0.01, 600);
  limit_->setDecimals(2);
  limit_->setValue(5);
  limit_->setSuffix(tr(" s"));
  limit_->setToolTip(tr("Seconds the search for the fastest placement may take (--time-limit)"));
  form->addRow(tr("Prompt tokens"), prompt_);
  form->addRow(tr("Generated tokens"), generate_);
  form->addRow(tr("Search time"), limit_);
  l->addLayout(form);
  analyse_ = new QPushButton(tr("Find the fastest placement"), this);
  analyse_->setObjectName(QStringLiteral("llmAnalyse"));
  l->addWidget(analyse_);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("llmSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->addWidget(summary_);
  auto* argRow = new QHBoxLayout;
  args_ = new QLineEdit(this);
  args_->setObjectName(QStringLiteral("llmArgs"));
  args_->setReadOnly(true);
  args_->setPlaceholderText(tr("llama.cpp arguments"));
  args_->setToolTip(tr("The llama.cpp arguments that realise the placement (-ngl, -ot with anchored regexes over "
                       "the file's tensor names, --no-op-offload where it matters)"));
  copy_ = new QPushButton(tr("Copy"), this);
  copy_->setObjectName(QStringLiteral("llmCopy"));
  copy_->setToolTip(tr("Copy the arguments to the clipboard"));
  copy_->setEnabled(false);
  argRow->addWidget(args_, 1);
  argRow->addWidget(copy_);
  l->addLayout(argRow);
  apply_ = new QPushButton(tr("Show the placement on the graph"), this);
  apply_->setObjectName(QStringLiteral("llmApply"));
  apply_->setToolTip(tr("Colour the graph by the placement; the memory view shows each device's memory under it"));
  apply_->setEnabled(false);
  l->addWidget(apply_);
  twoPhase_ = new QLabel(this);
  twoPhase_->setWordWrap(true);
  twoPhase_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->addWidget(twoPhase_);
  rules_ = new QTableWidget(0, 6, this);
  rules_->setObjectName(QStringLiteral("llmRules"));
  rules_->setHorizontalHeaderLabels(
      {tr("llama.cpp rule"), tr("Prefill ms"), tr("Decode tok/s"), tr("Job s"), tr("Best is"), tr("Arguments")});
  rules_->verticalHeader()->hide();
  rules_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  rules_->setSelectionBehavior(QAbstractItemView::SelectRows);
  rules_->horizontalHeader()->setStretchLastSection(true);
  rules_->setToolTip(tr("Each llama.cpp rule at its fastest setting within memory (every N, op offload on and off)"));
  l->addWidget(rules_, 1);

  connect(analyse_, &QPushButton::clicked, this, &LlmPanel::analyse);
  connect(copy_, &QPushButton::clicked, this, [this] {
    QApplication::clipboard()->setText(args_->text());
    status_->setText(tr("Copied the llama.cpp arguments."));
  });
  connect(apply_, &QPushButton::clicked, this, &LlmPanel::applyRequested);
  (void)setModel({}, Platform{});
}

LlmPanel::~LlmPanel() { jobs_.waitForDone(); }

void LlmPanel::setTimeLimit(double sec) { limit_->setValue(sec); }
void LlmPanel::setPrompt(int tokens) { prompt_->setValue(tokens); }
void LlmPanel::setGenerate(int tokens) { generate_->setValue(tokens); }

bool LlmPanel::setModel(const QString& path, const Platform& platform) {
  jobs_.drop();
  model_ = llmModelRef(path.toStdString());
  platform_ = platform;
  report_.reset();
  summary_->clear();
  args_->clear();
  twoPhase_->clear();
  rules_->setRowCount(0);
  copy_->setEnabled(false);
  apply_->setEnabled(false);
  analyse_->setEnabled(!model_.empty());
  status_->setText(model_.empty() ? tr("Open a llama.cpp model (a .gguf file) or a generated decoder (gen:llama, "
                                       "gen:moe) to find its fastest placement and the llama.cpp arguments for it.")
                                  : tr("%1 on %2: press the button to find the fastest placement.")
                                        .arg(QString::fromStdString(model_), QString::fromStdString(platform.name)));
  return !model_.empty();
}

void LlmPanel::analyse() {
  if (model_.empty()) return;
  const std::string model = model_;
  const Platform platform = platform_;
  const int64_t prompt = prompt_->value(), generate = generate_->value();
  const double limit = limit_->value();
  analyse_->setEnabled(false);
  status_->setText(tr("Evaluating llama.cpp's rules and searching (up to %1 s)...").arg(limit));
  QPointer<LlmPanel> self(this);
  jobs_.start([model, platform, prompt, generate, limit](const std::atomic<bool>&) {
    return analyseLlm(model, platform, prompt, generate, limit);
  },
              [self](Result<LlmReport> r) {
                if (!self) return;
                self->analyse_->setEnabled(true);
                if (!r) {
                  self->status_->setText(QString::fromStdString(r.message()));
                  emit self->finished(false);
                  return;
                }
                self->report_ = std::make_unique<LlmReport>(std::move(r).value());
                self->showReport(*self->report_);
                emit self->finished(true);
              });
}

void LlmPanel::showReport(const LlmReport& r) {
  const LlmJobTime& bt = r.best.singleTime;
  const int64_t G = r.generate;
  status_->setText(tr("%1: %2 layers%3; %4 (%5). A %6-token prompt, then %7 generated tokens.")
                       .arg(QString::fromStdString(r.model))
                       .arg(r.layers)
                       .arg(r.experts ? tr(" with routed experts") : QString())
                       .arg(QString::fromStdString(r.gpu), r.gpuCapacity > 0 ? gib(r.gpuCapacity) : tr("unlimited"))
                       .arg(r.prompt)
                       .arg(r.generate));
  QString s = tr("<b>Fastest placement</b> (one for both phases, as llama.cpp runs it)<br>"
                 "prefill <b>%1 ms</b> &nbsp; decode <b>%2 tokens/s</b> &nbsp; job %3 s<br>GPU peak %4 of %5")
                  .arg(num("%.1f", bt.prefillUs / 1000), num("%.2f", bt.decodeTokensPerS(G)), num("%.3f", bt.jobUs / 1e6),
                       gib(bt.accelPeakBytes), r.gpuCapacity > 0 ? gib(r.gpuCapacity) : tr("unlimited"));
  if (r.bestRuleUs > 0) s += tr(" &nbsp; <b>%1x</b> the fastest llama.cpp rule").arg(num("%.3f", r.bestRuleUs / bt.jobUs));
  // What the micro-batch gives apart from the placement: the fastest rule at best's -ub.
  if (r.bestRuleAtUbatchUs > 0)
    s += tr(" (at -ub %1, which best chose, the fastest rule: %2x)")
             .arg(r.ubatch)
             .arg(num("%.3f", r.bestRuleAtUbatchUs / bt.jobUs));
  if (r.best.timeLimitReached) s += tr("<br>The search stopped at its time limit: its best so far.");
  summary_->setText(s);
  args_->setText(QString::fromStdString(r.args));
  args_->setCursorPosition(0);
  copy_->setEnabled(true);
  apply_->setEnabled(true);
  if (r.best.twoPhase)
    twoPhase_->setText(tr("A placement per phase (KTransformers-style; llama.cpp cannot switch between phases) "
                          "takes %1 s, move included: prefill with <code>%2</code>, decode with <code>%3</code>.")
                           .arg(num("%.3f", r.best.twoPhaseTime.jobUs / 1e6),
                                QString::fromStdString(r.prefillArgs).toHtmlEscaped(),
                                QString::fromStdString(r.decodeArgs).toHtmlEscaped()));
  else
    twoPhase_->setText(tr("No placement per phase is faster once the move between phases is counted."));
  rules_->setRowCount(static_cast<int>(r.rules.size()));
  for (int i = 0; i < static_cast<int>(r.rules.size()); ++i) {
    const LlmRuleResult& x = r.rules[static_cast<size_t>(i)];
    QStringList cells = {QString::fromStdString(x.rule)};
    if (x.ok)
      cells << num("%.1f", x.time.prefillUs / 1000) << num("%.2f", x.time.decodeTokensPerS(G))
            << num("%.3f", x.time.jobUs / 1e6) << num("%.3fx", x.time.jobUs / bt.jobUs) << QString::fromStdString(x.args);
    else
      cells << QString() << QString() << QString() << QString() << QString::fromStdString(x.why);
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c >= 1 && c <= 4) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      item->setToolTip(cells[c]);
      rules_->setItem(i, c, item);
    }
  }
  rules_->resizeColumnsToContents();
}

}  // namespace partex::gui
