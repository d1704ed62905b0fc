#include "cpu/ops.h"
namespace partex::cpu {
void addOneDnnOps(std::vector<OpEntry>&) {}
void addElementwiseOps(std::vector<OpEntry>&) {}
void addShapeOps(std::vector<OpEntry>&) {}
void addReduceOps(std::vector<OpEntry>&) {}
void addMiscOps(std::vector<OpEntry>&) {}
}  // namespace partex::cpu
