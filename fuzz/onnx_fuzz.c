/* onnx_fuzz.c - libFuzzer target for the ONNX reader (frontend/onnx_read.c,
 * onnx_run.c's checks): any bytes must load as a model or fail with an
 * "onnx:" error, never crash or read past the buffer. `make fuzz-onnx`,
 * seeded with tests/golden/onnx/ (the models PyTorch exported). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tjit.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tj_onnx *m = tj_onnx_load_bytes(data, size, "fuzz");
    if (!m && strncmp(tj_last_error(), "onnx: ", 6))
        __builtin_trap();   /* a failure without its message */
    tj_onnx_free(m);
    tj_clear_error();
    return 0;
}
