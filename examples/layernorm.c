/* Layer normalisation over the rows of X (eps = 1e-5), gamma and beta per column: a row program (docs/parallelism.md). */
#include <math.h>
void layernorm(int n, int m, const float X[n][m], const float gamma[m], const float beta[m], float Y[n][m]) {
  for (int i = 0; i < n; i++) {
    float mu = 0.0f;
    for (int j = 0; j < m; j++) mu += X[i][j];
    mu /= m;
    float var = 0.0f;
    for (int j = 0; j < m; j++) var += (X[i][j] - mu) * (X[i][j] - mu);
    var /= m;
    float r = 1.0f / sqrtf(var + 1e-5f);
    for (int j = 0; j < m; j++) Y[i][j] = (X[i][j] - mu) * r * gamma[j] + beta[j];
  }
}
