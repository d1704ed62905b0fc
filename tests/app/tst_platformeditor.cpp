// Platform editor: edits through the table models change the platform and emit platformEdited;
// invalid edits are refused with a reason and leave it unchanged; renaming a device renames its
// links; saving writes a file that loads back to the same platform.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include "gui/platformeditor.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

class TstPlatformEditor : public QObject {
  Q_OBJECT
 private slots:
  void editDevicesAndLinks() {
    PlatformEditor ed;
    QAbstractItemModelTester dt(ed.devicesModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester lt(ed.linksModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy edited(&ed, &PlatformEditor::platformEdited);
    QVERIFY(ed.load("cpu-gpu-pcie"));
    QCOMPARE(edited.count(), 1);
    auto* dm = ed.devicesModel();
    QCOMPARE(dm->rowCount(), static_cast<int>(ed.platform().devices.size()));
    QVERIFY(dm->rowCount() >= 2);
    QVERIFY(ed.linksModel()->rowCount() >= 1);

    // A valid edit: the GPU's memory bandwidth.
    const int gpu = ed.platform().findDevice("gpu");
    QVERIFY(gpu >= 0);
    QVERIFY(dm->setData(dm->index(gpu, PlatformDevicesModel::BandwidthGBs), "123.5"));
    QCOMPARE(ed.platform().devices[static_cast<size_t>(gpu)].memBandwidthGBs, 123.5);
    QCOMPARE(edited.count(), 2);
    QCOMPARE(edited.last().at(0).value<Platform>().devices[static_cast<size_t>(gpu)].memBandwidthGBs, 123.5);

    // Invalid edits are refused with a reason, and nothing changes.
    const Platform before = ed.platform();
    QVERIFY(!dm->setData(dm->index(gpu, PlatformDevicesModel::BandwidthGBs), "-4"));
    QVERIFY(ed.lastMessage().contains("bandwidth"));
    QVERIFY(!dm->setData(dm->index(gpu, PlatformDevicesModel::Kind), "tpu"));
    QVERIFY(!dm->setData(dm->index(gpu, PlatformDevicesModel::Cores), "0"));
    QVERIFY(!dm->setData(dm->index(gpu, PlatformDevicesModel::Id), ""));
    const int other = gpu == 0 ? 1 : 0;
    QVERIFY2(!dm->setData(dm->index(gpu, PlatformDevicesModel::Id), QString::fromStdString(before.devices[static_cast<size_t>(other)].id)),
             "duplicate ids are refused");
    QCOMPARE(platformToJson(ed.platform()), platformToJson(before));
    QCOMPARE(edited.count(), 2);

    // Renaming a device renames it in the links too.
    QVERIFY(dm->setData(dm->index(gpu, PlatformDevicesModel::Id), "gpu0"));
    bool linked = false;
    for (const Link& l : ed.platform().links) {
      QVERIFY(l.from != "gpu" && l.to != "gpu");
      linked = linked || l.from == "gpu0" || l.to == "gpu0";
    }
    QVERIFY(linked);

    // Links: latency, a check box, and a refused endpoint.
    auto* lm = ed.linksModel();
    QVERIFY(lm->setData(lm->index(0, PlatformLinksModel::LatencyUs), "7"));
    QCOMPARE(ed.platform().links[0].latencyUs, 7.0);
    const bool shared = ed.platform().links[0].sharedMemory;
    QVERIFY(lm->setData(lm->index(0, PlatformLinksModel::SharedMemory), shared ? Qt::Unchecked : Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(ed.platform().links[0].sharedMemory, !shared);
    QVERIFY(!lm->setData(lm->index(0, PlatformLinksModel::To), "nowhere"));
    QVERIFY(ed.lastMessage().contains("nowhere"));
  }

  void saveAndReload() {
    PlatformEditor ed;
    QVERIFY(ed.load("mobile-soc"));
    auto* dm = ed.devicesModel();
    QVERIFY(dm->setData(dm->index(0, PlatformDevicesModel::LaunchUs), "3.25"));
    const std::string path = test::tempDir() + "/edited.json";
    QVERIFY(ed.saveAs(QString::fromStdString(path)));
    auto back = loadPlatformFile(path);
    QVERIFY2(back, back.message().c_str());
    QCOMPARE(back->devices[0].launchOverheadUs, 3.25);
    QCOMPARE(platformToJson(*back), platformToJson(ed.platform()));
    // A bad file gives an error naming it; the editor keeps its platform.
    const std::string bad = test::tempDir() + "/bad.json";
    QVERIFY(writeFileAtomic(bad, "{\"devices\": 3}"));
    QVERIFY(!ed.load(QString::fromStdString(bad)));
    QVERIFY(ed.lastMessage().contains("bad.json"));
    QCOMPARE(ed.platform().devices[0].launchOverheadUs, 3.25);
  }
};

QTEST_MAIN(TstPlatformEditor)
#include "tst_platformeditor.moc"
