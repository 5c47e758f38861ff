"""MCMC building blocks: IBP slice sampler, elliptical slice sampling, DP mixture, Polya-gamma."""
