// The this-machine probe's memory (issue 24, item 5): its copy buffers are sized from the last-level
// cache (sysfs, with a floor and a ceiling), it is counted so that the calibration's cache can be seen
// to skip it (tests/backends/tst_calibration), and the peak resident set that `execute` reports is the
// process tree's: a forked child's memory counts, as GNU time and cgroups count it.

#include <sys/wait.h>
#include <unistd.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "platform/platform.h"
#include "support/peakrss.h"
#include "testutil.h"

using namespace partex;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

/// One cache entry of a fake sysfs folder: DIR/indexN/{level,type,size}.
void addCache(const std::string& dir, int index, const std::string& level, const std::string& type,
              const std::string& size) {
  const std::filesystem::path p = std::filesystem::path(dir) / ("index" + std::to_string(index));
  std::filesystem::create_directories(p);
  std::ofstream(p / "level") << level << "\n";
  std::ofstream(p / "type") << type << "\n";
  std::ofstream(p / "size") << size << "\n";
}

/// Forks a child that writes to every page of `bytes` fresh bytes, then waits for it; true when it
/// exited 0.
bool childTouches(int64_t bytes) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    auto* p = static_cast<char*>(std::malloc(static_cast<size_t>(bytes)));
    if (!p) _exit(1);
    for (int64_t i = 0; i < bytes; i += 4096) p[i] = static_cast<char>(i);
    // Read one byte back so that the writes cannot be dropped.
    _exit(p[bytes / 2 / 4096 * 4096] == static_cast<char>(bytes / 2 / 4096 * 4096) ? 0 : 2);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

class TestMachineProbe : public QObject {
  Q_OBJECT

 private slots:
  /// The last-level cache is the highest level that is not an instruction cache; sizes in sysfs's units.
  void lastLevelCacheFromSysfs() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dir = tmp.path().toStdString();
    addCache(dir, 0, "1", "Data", "48K");
    addCache(dir, 1, "1", "Instruction", "32K");
    addCache(dir, 2, "2", "Unified", "2048K");
    QCOMPARE(lastLevelCacheBytes(dir), 2048 * int64_t(1024));
    addCache(dir, 3, "3", "Unified", "300M");
    QCOMPARE(lastLevelCacheBytes(dir), 300 * kMiB);
    // An instruction cache of a higher level (none exists, but the rule must hold) is not it.
    addCache(dir, 4, "4", "Instruction", "512M");
    QCOMPARE(lastLevelCacheBytes(dir), 300 * kMiB);
    // Unreadable or absent: 0, never a crash.
    QCOMPARE(lastLevelCacheBytes(dir + "/absent"), int64_t(0));
    QTemporaryDir broken;
    addCache(broken.path().toStdString(), 0, "x", "Unified", "lots");
    QCOMPARE(lastLevelCacheBytes(broken.path().toStdString()), int64_t(0));
  }

  /// 4x the cache, at least 16 MiB, at most 64 MiB, whole 2 MiB pages; 64 MiB when unknown.
  void copyBufferSize() {
    QCOMPARE(probeCopyBytes(8 * kMiB), 32 * kMiB);
    QCOMPARE(probeCopyBytes(2 * kMiB), 16 * kMiB);
    QCOMPARE(probeCopyBytes(300 * kMiB), 64 * kMiB);
    QCOMPARE(probeCopyBytes(0), 64 * kMiB);
    QCOMPARE(probeCopyBytes(5 * kMiB + 100), 22 * kMiB);  // 20 MiB + 400 bytes, rounded up to 2 MiB pages
  }

  /// A real probe: counted, its buffers sized from this machine's cache, its numbers positive, and the
  /// platform built from it carries them. Its child's memory is in the tree's peak once it was waited for.
  void probeThisComputer() {
    const int64_t before = machineProbeRuns();
    const MachineProbe p = probeThisMachine();
    QCOMPARE(machineProbeRuns(), before + 1);
    QCOMPARE(p.lastLevelCacheBytes, lastLevelCacheBytes());
    QCOMPARE(p.copyBytes, probeCopyBytes(p.lastLevelCacheBytes));
    QVERIFY(p.cores >= 1);
    QVERIFY(p.serialGflops > 0 && p.parallelGflops >= p.serialGflops);
    QVERIFY(p.copyGBs1 > 0 && p.copyGBsN >= p.copyGBs1);
    QVERIFY(!p.isa.empty());
    // The two buffers were written (in the child, or in this process when the child could not run).
    QVERIFY2(peakResidentSet().tree() >= 2 * p.copyBytes, qPrintable(QString::number(peakResidentSet().tree())));

    const Platform plat = thisMachineFromProbe(p);
    QCOMPARE(machineProbeRuns(), before + 1);  // Building from a probe measures nothing.
    const Device& core0 = plat.devices[static_cast<size_t>(plat.findDevice("core0"))];
    QCOMPARE(core0.cores, 1);
    QVERIFY(core0.defaultPeakGflops > 0);
    QCOMPARE(static_cast<int>(plat.devices.size()), 2 + p.cores);
    QVERIFY2(plat.description.find(std::to_string(p.copyBytes / kMiB) + " MiB") != std::string::npos,
             plat.description.c_str());
  }

  /// A forked child that touches more than this process ever did sets the tree's peak (RUSAGE_CHILDREN);
  /// this process's own peak (all that RUSAGE_SELF alone would report) stays below it.
  void treePeakCountsChildren() {
    const PeakRss before = peakResidentSet();
    QVERIFY(before.self > 0);
    // Above every peak so far (the probe's child above may have set a large one): only this child can
    // reach it.
    const int64_t touch = before.tree() + 64 * kMiB;
    QVERIFY(childTouches(touch));
    const PeakRss after = peakResidentSet();
    QVERIFY2(after.self < touch, "this process itself grew: the check below would not tell anything");
    QVERIFY2(after.children >= touch, qPrintable(QString("children %1 < touched %2").arg(after.children).arg(touch)));
    QVERIFY(after.tree() >= touch);
    QCOMPARE(after.tree(), std::max(after.self, after.children));
  }

  /// `execute --json` reports the tree's peak: with an empty calibration cache it probes this machine in
  /// a forked child (two buffers of probeCopyBytes), and that child's memory is in peak_rss_bytes.
  void executeReportsTreePeak() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString model = tmp.path() + "/m.onnx", plan = tmp.path() + "/plan.json";
    auto gen =
        test::runCli({"generate", "mobilenetv2", "--weights", "--image-size", "32", "--classes", "10", "-o", model});
    QVERIFY2(gen.code == 0, gen.err.constData());
    auto sched = test::runCli(
        {"schedule", model, "-p", "this-machine", "--algo", "single", "--param", "device=core0", "-o", plan});
    QVERIFY2(sched.code == 0, sched.err.constData());
    // A fresh cache folder: the probe and the calibration run in this execute.
    const QByteArray cacheBefore = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", (tmp.path() + "/cache").toLocal8Bit());
    auto run = test::runCli({"execute", model, "--plan", plan, "--reps", "1", "--warmup", "0", "--json"});
    qputenv("XDG_CACHE_HOME", cacheBefore);
    QVERIFY2(run.code == 0, run.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(run.out).object();
    const double peak = o["peak_rss_bytes"].toDouble();
    const auto buffers = static_cast<double>(2 * probeCopyBytes(lastLevelCacheBytes()));
    QVERIFY2(peak >= buffers, qPrintable(QString("peak_rss_bytes %1 < the probe's buffers %2").arg(peak).arg(buffers)));
  }
};

QTEST_GUILESS_MAIN(TestMachineProbe)
#include "tst_machine_probe.moc"
