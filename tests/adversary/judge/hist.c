/* hist: an integer histogram, h[idx[i]] += 1 (h is updated in place). */
void hist(int n, int nb, int idx[n], int h[nb])
{
  for (int i = 0; i < n; i++)
    h[idx[i]] += 1;
}
