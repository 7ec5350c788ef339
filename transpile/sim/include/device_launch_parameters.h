// Stand-in for the CUDA header of the same name: the CPU simulator.
#include "cuda_sim.h"
