"""Tests of ibp_rflvm.targets."""
