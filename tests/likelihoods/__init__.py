"""Tests of ibp_rflvm.likelihoods."""
