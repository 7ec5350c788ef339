// cuda_sim_end.h: force-included last (build.py, after cuda_sim.h and any audit header): removes
// the macros the simulator's headers need internally, so that the candidate's code sees none of
// them (docs/verify.md, "Environment detection").
#undef SIM_RT
#undef CUDA_SIM_RUNTIME_EXTERN
#undef CUDA_SIM_RUNTIME_OBJECT
