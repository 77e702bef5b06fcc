/* tests/fuzz/fuzz.h - what every fuzz target defines, and helpers they share. */
#ifndef PS_FUZZ_H
#define PS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point: one input; returns 0 (any other value is reserved). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
