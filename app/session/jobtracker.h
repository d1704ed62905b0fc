#pragma once
/// \file One kind of background work where the newest job wins (the model is KDAB hotspot's
/// JobTracker): loading a model, a scheduler run, a comparison, the graph layout, the profiler.
/// Starting a job supersedes the one before: the older job is asked to stop through its token and
/// its result is dropped when it arrives. The newest job's result comes back queued, on the thread of
/// the context object, and only while that object lives. Replaces the QFutureWatcher, generation
/// counter and "pending" flag that each of those had written by hand.

#include <QFuture>
#include <QList>
#include <QMetaObject>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace partex::gui {

/// See the file comment. Not thread-safe: used from the context object's thread.
class JobTracker {
 public:
  explicit JobTracker(QObject* context);
  /// Asks every job still running to stop and drops their results, without waiting for them (call
  /// waitForDone() first where a job uses something that goes with the context).
  ~JobTracker();
  JobTracker(const JobTracker&) = delete;
  JobTracker& operator=(const JobTracker&) = delete;

  /// Runs `job(stop)` on the thread pool, where `stop` is the job's cancel token (const
  /// std::atomic<bool>&, e.g. for SchedOptions::cancel), and later `done(result)` on the context's
  /// thread, unless a newer start() or drop() came first. Supersedes the running job (see the file
  /// comment).
  template <typename Job, typename Done>
  void start(Job job, Done done);

  /// True from start() until the newest job's result is handed to `done` (or dropped).
  bool isRunning() const { return running_; }
  /// Asks the newest job to stop; its result still comes to `done` (which can say "cancelled").
  void stop();
  /// True when the newest job was asked to stop (by stop(), drop() or a newer start()).
  bool stopRequested() const;
  /// Asks the newest job to stop and drops its result: isRunning() turns false at once.
  void drop();
  /// Blocks until every job started so far has returned (tests, shutdown). Results still come
  /// queued, through the event loop.
  void waitForDone();

 private:
  /// Shared with the workers and the queued deliveries, so that they never reach a tracker that is gone.
  struct Shared {
    std::atomic<std::uint64_t> newest{0};  ///< Id of the job whose result is wanted (0: none).
    std::mutex mutex;                      ///< Held while a worker posts to the context.
    bool alive = true;                     ///< False once the tracker is gone (under `mutex`).
  };
  std::uint64_t next();
  void track(QFuture<void> f);

  QObject* context_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::shared_ptr<std::atomic<bool>> stop_;  ///< The newest job's token.
  bool running_ = false;
  QList<QFuture<void>> futures_;  ///< Jobs that may still run.
};

template <typename Job, typename Done>
void JobTracker::start(Job job, Done done) {
  const std::uint64_t id = next();
  auto stop = std::make_shared<std::atomic<bool>>(false);
  stop_ = stop;
  running_ = true;
  std::shared_ptr<Shared> shared = shared_;
  bool* running = &running_;
  QObject* context = context_;
  track(QtConcurrent::run([job = std::move(job), done = std::move(done), stop, shared, id, running, context]() mutable {
    auto result = std::make_shared<decltype(job(*stop))>(job(*stop));
    if (shared->newest.load() != id) return;  // superseded while it ran
    // The tracker lives no longer than its context (a member of it, or destroyed before it), so
    // while it is alive the context is too: post under the lock that the tracker's destructor takes.
    // A delivery still queued when the context goes is discarded with the context's events.
    const std::lock_guard<std::mutex> lock(shared->mutex);
    if (!shared->alive) return;
    QMetaObject::invokeMethod(
        context,
        [done = std::move(done), result, shared, id, running]() mutable {
          if (shared->newest.load() != id) return;  // superseded or dropped meanwhile
          *running = false;
          done(std::move(*result));
        },
        Qt::QueuedConnection);
  }));
}

}  // namespace partex::gui
