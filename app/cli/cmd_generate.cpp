// partex-cli generate KIND [options] -o FILE: models made in code.
#include <iostream>

#include "commands.h"
#include "gen/generator.h"
#include "support/strings.h"

namespace partex::cli {

void addGenerate(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("generate", "Write a generated ONNX model (" + join(generatorKinds(), ", ") + ")");
  auto spec = std::make_shared<GenSpec>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("kind", spec->kind, "Model kind: " + join(generatorKinds(), ", "))->required();
  cmd->add_option("-o,--output", *out, "Output .onnx file")->required();
  cmd->add_flag("--weights", spec->weights, "Store seeded random weights (default: ConstantOfShape placeholders)");
  cmd->add_option("--seed", spec->seed, "Random seed")->capture_default_str();
  cmd->add_option("--batch", spec->batch, "Batch size")->capture_default_str();
  cmd->add_option("--image-size", spec->imageSize, "CNN input height and width")->capture_default_str();
  cmd->add_option("--classes", spec->numClasses, "CNN classes")->capture_default_str();
  cmd->add_option("--layers", spec->layers, "Transformer blocks")->capture_default_str();
  cmd->add_option("--seq", spec->seqLen, "Transformer sequence length (llama: prompt or cache length)")->capture_default_str();
  cmd->add_option("--hidden", spec->hidden, "Transformer hidden size")->capture_default_str();
  cmd->add_option("--heads", spec->heads, "Transformer attention heads")->capture_default_str();
  cmd->add_option("--vocab", spec->vocab, "Transformer vocabulary size")->capture_default_str();
  cmd->add_option("--kv-heads", spec->kvHeads, "Llama: key/value heads (0 = heads)")->capture_default_str();
  cmd->add_option("--intermediate", spec->intermediate, "Llama: gated-MLP size (0 = Llama's rule from hidden)")
      ->capture_default_str();
  cmd->add_option("--phase", spec->phase, "Llama: prefill (seq prompt tokens) or decode (one token, seq cached)")
      ->capture_default_str();
  cmd->add_option("--dtype", spec->dtype, "Llama: weight and activation type, float32 or float16")
      ->capture_default_str();
  cmd->add_option("--nodes", spec->nodes, "Random DAG: number of operators")->capture_default_str();
  cmd->add_option("--width", spec->width, "Random DAG: parallel branches")->capture_default_str();
  cmd->callback([spec, out, &exitCode] {
    auto st = generateModelFile(*spec, *out);
    if (!st) {
      exitCode = fail(st.message());
      return;
    }
    std::cerr << "partex-cli: wrote " << *out << "\n";
    exitCode = 0;
  });
}

}  // namespace partex::cli
