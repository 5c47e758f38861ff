"""The MCMC machinery: kept samples and traces, sweep kernels over a target, the chain driver."""
