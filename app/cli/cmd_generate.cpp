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
  auto preset = std::make_shared<std::string>();
  cmd->add_option("--preset", *preset,
                  "Llama/moe: a published decoder's shape (" + join(decoderPresets(), ", ") +
                      "); overrides --layers, --hidden, ... given with it");
  cmd->add_option("--quant", spec->quant,
                  "Llama/moe: ggml storage type of the matrix weights (none, f16, bf16, q8_0, q6_k, q5_k, q4_k, "
                  "q4_0, mxfp4, ...)")
      ->capture_default_str();
  cmd->add_option("--head-dim", spec->headDim, "Llama/moe: attention head size (0 = hidden / heads)")->capture_default_str();
  cmd->add_option("--experts", spec->experts, "Moe: routed experts per layer")->capture_default_str();
  cmd->add_option("--experts-used", spec->expertsUsed, "Moe: experts per token (top-k)")->capture_default_str();
  cmd->add_option("--expert-ffn", spec->expertFfn, "Moe: each expert's gated-MLP size (0 = intermediate)")
      ->capture_default_str();
  cmd->add_option("--shared-ffn", spec->sharedFfn, "Moe: the shared expert's gated-MLP size (0 = none)")
      ->capture_default_str();
  cmd->add_option("--sliding-window", spec->slidingWindow, "Llama/moe: sliding-window size in tokens (0 = none)")
      ->capture_default_str();
  cmd->add_option("--sliding-period", spec->slidingPeriod,
                  "Llama/moe: every period-th layer attends everything, the others slide (1: all slide)")
      ->capture_default_str();
  cmd->add_option("--nodes", spec->nodes, "Random DAG: number of operators")->capture_default_str();
  cmd->add_option("--width", spec->width, "Random DAG: parallel branches")->capture_default_str();
  cmd->callback([spec, out, preset, &exitCode] {
    if (!preset->empty()) {
      if (auto p = applyDecoderPreset(*preset, *spec); !p) {
        exitCode = fail("--preset: " + p.message());
        return;
      }
    }
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
