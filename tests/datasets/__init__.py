"""Tests of ibp_rflvm.datasets."""
