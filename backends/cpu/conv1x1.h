#pragma once
/// \file Internal to the CPU backend: a 1x1 convolution over channels-last pixels as a blocked product
/// of the pixel rows with the weights (conv1x1.cpp), a depthwise 2-D convolution over channels-last
/// rows, and the vectorised activations their chains apply.
/// FusedConvKernel (ops_fused.cpp) runs them instead of oneDNN 2.6's convolutions where those were slower
/// (few channels over many pixels: yolox_nano's 16 and 32 channel pointwise convolutions at 104x104 took
/// 1.5-2.4x ONNX Runtime's time, its depthwise ones 1.5-2.2x; issue 24).

#include <cstdint>

namespace partex::cpu {

/// Columns of one vector of the product: the weights' rows are padded to a multiple of this.
constexpr int64_t kPixelGemmLanes = 16;

/// Whether gemmPixels and depthwiseRowNhwc have their fast (AVX-512) builds on this processor;
/// FusedConvKernel keeps oneDNN elsewhere (an AVX2 build of the same tiles spills its accumulators).
bool pixelGemmFast();

/// y[p * M + m] = bias[m] + sum_c x[p * C + c] * wT[c * Mp + m] for p < P, m < M: the 1x1 convolution of
/// P channels-last pixels of C channels into M channels. wT holds the weights transposed, [C][Mp] with
/// Mp = M rounded up to kPixelGemmLanes and zeros beyond M; bias holds Mp values (zeros beyond M).
/// Registers hold a tile of up to 4 vectors of columns by 6-16 pixel rows; single-threaded.
void gemmPixels(const float* x, int64_t P, int64_t C, const float* wT, const float* bias, int64_t M, float* y);

/// One output row oy of a depthwise 2-D convolution (one input channel per group, C groups, C a multiple
/// of kPixelGemmLanes) of one channels-last image x [H][W][C]: y[ox * C + c] = bias[c] + sum over the taps
/// (ky, kx) that fall inside the image of x[(iy * W + ix) * C + c] * wT[(ky * kw + kx) * C + c], with
/// iy = oy * sh - ph + ky * dh and ix = ox * sw - pw + kx * dw, for ox < OW. Registers hold 8 output pixels
/// of 16 channels; the columns whose taps reach outside the row go one pixel at a time.
void depthwiseRowNhwc(const float* x, int64_t H, int64_t W, int64_t C, const float* wT, const float* bias, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oy,
                      int64_t OW, float* y);

/// The activations actFast computes (oneDNN's eltwise parameters alpha a and beta b, as applyElt takes
/// them); None: this activation is not one of them.
enum class FastAct : int { None, Relu, Logistic, Swish, HardSwish, Clip, Linear, HardSigmoid };

/// y = f(y) over n contiguous values in float, vectorised (e^x through expVec), for the activations of
/// FastAct. Agrees with applyElt to a few ulp (Logistic, Swish: expVec against expf) or exactly.
void actFast(FastAct f, float a, float b, float* y, int64_t n);

}  // namespace partex::cpu
