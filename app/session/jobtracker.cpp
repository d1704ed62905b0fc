#include "session/jobtracker.h"

namespace partex::gui {

JobTracker::JobTracker(QObject* context) : context_(context) {}

JobTracker::~JobTracker() {
  shared_->newest.store(0);
  if (stop_) stop_->store(true);
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->alive = false;
}

std::uint64_t JobTracker::next() {
  if (stop_) stop_->store(true);  // the newest job wins: the one before may stop early
  static std::atomic<std::uint64_t> ids{0};
  const std::uint64_t id = ++ids;
  shared_->newest.store(id);
  return id;
}

void JobTracker::track(QFuture<void> f) {
  futures_.removeIf([](const QFuture<void>& x) { return x.isFinished(); });
  futures_.append(std::move(f));
}

void JobTracker::stop() {
  if (stop_) stop_->store(true);
}

bool JobTracker::stopRequested() const {
  return stop_ && stop_->load();
}

void JobTracker::drop() {
  stop();
  shared_->newest.store(0);
  running_ = false;
}

void JobTracker::waitForDone() {
  for (auto& f : futures_) f.waitForFinished();
  futures_.clear();
}

}  // namespace partex::gui
