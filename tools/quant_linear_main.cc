// kvserve-quant-linear: one GGUF tensor, as stored, times rows of x through
// the quantized product (kernels/quant/) with every instruction set this CPU
// runs, for tests/quantized_weights_test.py's NumPy reference.
//
//   kvserve-quant-linear --model F.gguf --tensor blk.0.ffn_down.weight
//       --x x.f32 --rows M --out y   (writes y.<isa>.f32 for each isa: [M, N] float32)
//
// x.f32 holds M rows of K float32 values (K the tensor's row length); the
// rows are rounded to int8 blocks as the CPU backend rounds them.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/loading/ggml_types.h"
#include "engine/loading/gguf_file.h"
#include "kernels/quant/quant_product.h"
#include "kernels/quant/quantized_activations.h"

ABSL_FLAG(std::string, model, "", "GGUF file.");
ABSL_FLAG(std::string, tensor, "", "Tensor name in the file (a block format).");
ABSL_FLAG(std::string, x, "", "Rows of x: raw little-endian float32, --rows × K.");
ABSL_FLAG(int, rows, 1, "Rows in --x.");
ABSL_FLAG(std::string, out, "y", "Output prefix: <out>.<isa>.f32, [rows, N] float32.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace kvserve;
  auto file = GgufFile::Open(absl::GetFlag(FLAGS_model));
  if (!file.ok()) {
    std::cerr << file.status().message() << "\n";
    return 1;
  }
  const GgufTensorInfo* t = (*file)->FindTensor(absl::GetFlag(FLAGS_tensor));
  if (t == nullptr || t->dims.size() != 2) {
    std::cerr << "no 2-D tensor " << absl::GetFlag(FLAGS_tensor) << "\n";
    return 1;
  }
  const std::optional<DType> dtype = BlockDTypeOfGgml(t->type);
  if (!dtype) {
    std::cerr << absl::GetFlag(FLAGS_tensor) << " is " << GgmlTypeName(t->type)
              << ", not a block format\n";
    return 1;
  }
  const int k = static_cast<int>(t->dims[0]), n = static_cast<int>(t->dims[1]);
  const int m = absl::GetFlag(FLAGS_rows);
  std::vector<float> x(size_t(m) * k);
  std::ifstream in(absl::GetFlag(FLAGS_x), std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(x.data()), std::streamsize(x.size() * sizeof(float)))) {
    std::cerr << "--x: cannot read " << m << " rows of " << k << " float32\n";
    return 1;
  }
  QuantizedActivations a;
  ResizeQuantizedActivations(*dtype, m, k, &a);
  QuantizeActivationRows(x.data(), k, 0, m, &a);
  for (const std::string& isa : QuantProductRunnableIsas()) {
    std::vector<float> y(size_t(m) * n);
    QuantProductWithIsa(isa, a, t->data, 0, n, y.data(), n);
    std::ofstream out(absl::GetFlag(FLAGS_out) + "." + isa + ".f32", std::ios::binary);
    out.write(reinterpret_cast<const char*>(y.data()), std::streamsize(y.size() * sizeof(float)));
    std::cout << isa << "\n";
  }
  return 0;
}
