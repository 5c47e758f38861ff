"""Tests of ibp_rflvm.baselines."""
