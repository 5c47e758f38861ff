"""The posterior embedding: invariant to how samples label, flip, rotate and split dimensions;
exact and randomized solvers agree; new rows are placed by the same projection."""

import numpy as np
import pytest

from ibp_rflvm.likelihoods.base import LikelihoodParams
from ibp_rflvm.mcmc.record import Sample
from ibp_rflvm.summaries.embedding import (
    Embedding,
    check_n_components,
    fit_embedding,
    sample_block,
)


def _sample(rng, N=40, K=3, M=8, J=5, bias=True):
    X = rng.standard_normal((N, K))
    Z = (rng.random((N, K)) < 0.7).astype(float)
    L = 2 * M + int(bias)
    W = rng.standard_normal((M, K))
    return Sample(X * Z, W, LikelihoodParams(beta=rng.standard_normal((L, J))), np.full(K, 0.5))


def _embed(samples, kind, weights=None, **kw):
    weights = np.full(len(samples), 1.0 / len(samples)) if weights is None else weights
    blocks = [np.sqrt(w) * sample_block(s, True, kind) for s, w in zip(samples, weights, strict=True)]
    return fit_embedding(blocks, **kw)


def _relabelled(smp, rng, how):
    H, W = smp.H, smp.W
    K = H.shape[1]
    if how == "permute-and-flip":
        perm, signs = rng.permutation(K), rng.choice([-1.0, 1.0], K)
        H, W = H[:, perm] * signs, W[:, perm] * signs
    elif how == "rotate":
        Q, _ = np.linalg.qr(rng.standard_normal((K, K)))
        H, W = H @ Q, W @ Q
    elif how == "split":
        # Dimension 0 split between two columns that share its frequencies: some rows use one
        # copy, the others the other; H W^T is unchanged.
        rows = rng.random(H.shape[0]) < 0.5
        H = np.column_stack([H[:, 0] * rows, H[:, 0] * ~rows, H[:, 1:]])
        W = np.column_stack([W[:, 0], W[:, 0], W[:, 1:]])
    return smp._replace(H=H, W=W)


@pytest.mark.parametrize("kind", ["signal", "features"])
@pytest.mark.parametrize("how", ["permute-and-flip", "rotate", "split"])
def test_embedding_does_not_depend_on_how_samples_label_their_dimensions(kind, how):
    rng = np.random.default_rng(3)
    samples = [_sample(rng, bias=True) for _ in range(5)]
    other = [_relabelled(s, rng, how) for s in samples]
    a, b = _embed(samples, kind), _embed(other, kind)
    assert a.n_available == b.n_available > 5
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-9)
    np.testing.assert_allclose(a.scores[:, :5], b.scores[:, :5], atol=1e-8)


def test_full_rank_scores_reproduce_the_posterior_kernel_distances():
    rng = np.random.default_rng(0)
    samples = [_sample(rng, N=30) for _ in range(4)]
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    emb = _embed(samples, "signal", weights)
    K = sum(w * sample_block(s, True, "signal") @ sample_block(s, True, "signal").T
            for s, w in zip(samples, weights, strict=True))  # fmt: skip
    d2 = np.diag(K)[:, None] + np.diag(K)[None, :] - 2 * K
    e = emb.scores
    e2 = ((e[:, None, :] - e[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(e2, d2, atol=1e-9 * d2.max())
    # The trace of the centred kernel is the total variance, all of it in the components.
    assert emb.explained_share()[-1] == pytest.approx(1.0, rel=1e-10)


@pytest.mark.parametrize("kind", ["signal", "features"])
def test_randomized_solver_matches_the_exact_one(kind):
    # The signal kernel's leading components, well separated from the rest of its spectrum,
    # agree to 1e-6; on the flat spectrum of the features kernel power iterations converge
    # slowly, and all five components agree to 1e-3.
    rng = np.random.default_rng(1)
    samples = [_sample(rng, N=300, K=2, M=10, J=4) for _ in range(6)]
    exact = _embed(samples, kind, n_components=5)
    approx = _embed(samples, kind, n_components=5, exact_max_rows=10)
    tol = 1e-6 if kind == "signal" else 1e-3
    np.testing.assert_allclose(approx.eigenvalues[:2], exact.eigenvalues[:2], rtol=tol)
    scale = np.abs(exact.scores).max()
    np.testing.assert_allclose(approx.scores[:, :2], exact.scores[:, :2], atol=10 * tol * scale)
    np.testing.assert_allclose(approx.eigenvalues, exact.eigenvalues, rtol=1e-3)


def test_training_rows_projected_as_new_rows_land_on_their_scores():
    rng = np.random.default_rng(2)
    samples = [_sample(rng) for _ in range(3)]
    w = np.array([0.5, 0.3, 0.2])
    blocks = [np.sqrt(wi) * sample_block(s, True, "signal") for s, wi in zip(samples, w, strict=True)]
    emb = fit_embedding(blocks)
    sub = [b[:7] for b in blocks]
    np.testing.assert_allclose(emb.project(sub, blocks, 4), emb.scores[:7, :4], atol=1e-9)


def test_default_dimension_is_the_fewest_components_with_90_percent():
    emb = Embedding(np.zeros((5, 4)), np.array([5.0, 3.0, 1.0, 0.5]), total_variance=10.0)
    # Cumulative shares 0.5, 0.8, 0.9, 0.95: the third component reaches 90%.
    assert emb.default_dimension() == 3
    assert emb.default_dimension(0.99) == 4  # never more than there are


def test_own_dimension_is_never_narrower_than_the_latent():
    emb = Embedding(np.zeros((5, 4)), np.array([5.0, 3.0, 1.0, 0.5]), total_variance=10.0)
    assert emb.own_dimension(latent_width=2) == 3  # the trace rule is wider
    assert emb.own_dimension(latent_width=4) == 4  # the latent is wider
    assert emb.own_dimension(latent_width=9) == 4  # never more than there are


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3", 11])
def test_bad_numbers_of_components_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="n_components"):
        check_n_components(bad, 10)


def test_unknown_kernel_is_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="kernel must be one of"):
        sample_block(_sample(rng), False, "latent")


def test_row_centring_ignores_an_offset_the_likelihood_cannot_see():
    # A multinomial's softmax ignores a constant added to a row's predictors: with rows centred,
    # a sample whose predictors differ only by such offsets gives the same embedding.
    rng = np.random.default_rng(4)
    smp = _sample(rng)
    shifted = smp._replace(params=LikelihoodParams(beta=smp.params.beta.copy()))
    # Feature 0's weights moved alike in every column: row i's predictors all move by 3 Phi_i0.
    shifted.params.beta[0] += 3.0
    plain = [sample_block(s, True, "signal") for s in (smp, shifted)]
    assert not np.allclose(fit_embedding(plain[:1]).scores, fit_embedding(plain[1:]).scores)
    centred = [fit_embedding([sample_block(s, True, "signal", centre_rows=True)]) for s in (smp, shifted)]
    np.testing.assert_allclose(centred[0].scores, centred[1].scores, atol=1e-10)


def test_a_fits_embedding_can_be_wider_than_the_data_for_the_documented_reasons():
    """``embedding_`` is wider than the data's 8 columns here; its docstring says why: one
    sample's block has rank at most J, but the mixture over samples and chains has more
    components, and the width is never below the posterior median of K+. (Seeds 0-3 gave widths
    15-24 over 6, 8 and 10 columns with the HMC move in the sweep; at 14 columns, seed 0's 13
    was narrower than the data.)"""
    import warnings

    from ibp_rflvm import IBPRFLVM, holdout_mask
    from ibp_rflvm.datasets import make_cambridge
    from ibp_rflvm.summaries.embedding import latent_width, posterior_block, posterior_embedding

    Y, _ = holdout_mask(make_cambridge(70, random_state=1)["Y"][:, :8], 0.2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = IBPRFLVM(n_iter=16, n_frequencies=10, random_state=0, n_chains=2, n_jobs=1).fit(Y)
    J = Y.shape[1]
    post = m.posterior_
    emb = posterior_embedding(post)
    assert m.embedding_.shape[1] == m.embedding_dims_ > J
    one = fit_embedding([posterior_block(post, post.samples[-1])])
    assert one.n_available <= J < emb.n_available
    # The width is the documented rule: 90% of the trace, raised to the median K+, capped.
    rule = min(max(emb.default_dimension(), latent_width(post)), emb.n_available)
    assert m.embedding_dims_ == rule
    doc = type(m).embedding_.__doc__
    assert "``J``" in doc and "median of ``K+``" in doc and "embedding(n)" in doc
