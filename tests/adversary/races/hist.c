/* hist: count the values of data (each in 0..nb-1) into nb bins. */
void hist(int n, int nb, int data[n], int bins[nb])
{
  for (int b = 0; b < nb; b++)
    bins[b] = 0;
  for (int i = 0; i < n; i++)
    bins[data[i]] += 1;
}
