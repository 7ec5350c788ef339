/* Softmax over the rows of X: a warp per row (docs/parallelism.md, row programs). */
#include <math.h>
void softmax(int n, int m, float X[n][m], float Y[n][m]) {
  for (int i = 0; i < n; i++) {
    float mx = X[i][0];
    for (int j = 1; j < m; j++) mx = fmaxf(mx, X[i][j]);
    float s = 0.0f;
    for (int j = 0; j < m; j++) { Y[i][j] = expf(X[i][j] - mx); s += Y[i][j]; }
    for (int j = 0; j < m; j++) Y[i][j] /= s;
  }
}
