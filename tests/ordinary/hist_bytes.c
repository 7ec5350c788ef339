// hist_bytes: a histogram of bytes through a pointer: the index is a byte read from memory, so the
// pointer's extent is 256 (the byte's range); the updates become atomic
// expect: parallel i

#include <stdint.h>

void hist_bytes(int n, const uint8_t *in, uint32_t *hist) {
  for (int i = 0; i < n; i++)
    hist[in[i]] += 1;
}
