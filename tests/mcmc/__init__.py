"""Tests of ibp_rflvm.mcmc."""
