#pragma once
/// \file Test helper: a task graph of tests/data/taskgraphs/ as a cost table.

#include <string>

#include "cost/costtable.h"
#include "support/files.h"
#include "testutil.h"

namespace partex::test {

/// tests/data/taskgraphs/NAME (e.g. "heft2002.json", the HEFT paper's example) parsed.
inline Result<CostTable> testTaskGraph(const std::string& name) {
  const std::string path = testDataDir() + "/taskgraphs/" + name;
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  return parseTaskGraph(*bytes, path);
}

}  // namespace partex::test
