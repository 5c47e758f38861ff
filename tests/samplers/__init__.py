"""Tests of ibp_rflvm.samplers."""
