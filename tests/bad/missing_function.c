// ERROR: 1:1: function 'nope' not found
// ARGS: function=nope
/* Without function=..., this file fails too: no function has a loop. */
void kernel_a(int n, double A[n]) {
  A[0] = n;
}
void kernel_b(int n, double A[n]) {
  A[1] = n;
}
