"""Tests of ibp_rflvm.evaluation."""
