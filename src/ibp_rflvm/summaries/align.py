"""Matching latent dimensions across posterior samples.

A sample's dimensions have no identity: between kept samples they are born, die and swap
labels, and chains label them independently. To summarise one dimension over the posterior,
each sample's active dimensions are matched to a set of reference dimensions (the label
switching problem; Stephens 2000 relabels samples to minimise a loss against a reference, which
is what is done here with a loss built from what a dimension does rather than from its index).

Two dimensions are alike when the same rows use them and they change the same columns the same
way: the similarity of a sample's dimension ``k`` and a reference ``r`` is the mean of

* the weighted Jaccard overlap of their rows, ``|u_k . p_r| / (|u_k| + |p_r| - u_k . p_r)``,
  with ``u_k`` the sample's 0/1 usage and ``p_r`` the reference's per-row usage frequency;
* the cosine of their effects on the columns (:mod:`.effects`), counted as 0 when negative.

Both are invariant to what the model cannot see (a dimension's sign, since flipping ``x`` and
its frequency coordinates together changes no feature). Each sample is matched to the
references by the Hungarian assignment (scipy's ``linear_sum_assignment``) maximising the
summed similarity; a dimension whose best match is below :data:`MIN_SIMILARITY` starts a
reference of its own. Two passes: the first builds the references from running weighted means,
sample by sample; the second matches every sample afresh to the finished references, so the
labels do not depend on which samples came first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from .effects import SampleEffects

#: Similarity (in [0, 1]) below which a sample's dimension is not the reference it is closest to.
#: Two unrelated dimensions that each use half the rows overlap by about 1/3 and have effects
#: near orthogonal, a similarity near 0.17; one dimension seen in two samples scores 0.8-1.
MIN_SIMILARITY = 0.4


def similarity(
    used: np.ndarray, effect: np.ndarray, ref_usage: np.ndarray, ref_effect: np.ndarray
) -> np.ndarray:
    """``k x R`` similarities of a sample's dimensions (`used`: ``N x k`` bool; `effect`:
    ``k x J``) to references (`ref_usage`: ``N x R`` frequencies; `ref_effect`: ``R x J``)."""
    u = used.astype(np.float64)
    inter = u.T @ ref_usage
    union = u.sum(axis=0)[:, None] + ref_usage.sum(axis=0)[None, :] - inter
    jaccard = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    norms = np.linalg.norm(effect, axis=1)[:, None] * np.linalg.norm(ref_effect, axis=1)[None, :]
    dots = effect @ ref_effect.T
    cosine = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return 0.5 * (jaccard + np.clip(cosine, 0.0, None))


class _References:
    """Running weighted sums of the references' usage and effects."""

    def __init__(self, n_rows: int, n_cols: int):
        self.usage = np.zeros((n_rows, 0))
        self.effect = np.zeros((0, n_cols))
        self.weight = np.zeros(0)

    @property
    def size(self) -> int:
        return self.weight.size

    def means(self) -> tuple[np.ndarray, np.ndarray]:
        w = np.where(self.weight > 0, self.weight, 1.0)
        return self.usage / w, self.effect / w[:, None]

    def add(self, used: np.ndarray, effect: np.ndarray, w: float) -> None:
        self.usage = np.hstack([self.usage, w * used.astype(np.float64)])
        self.effect = np.vstack([self.effect, w * effect])
        self.weight = np.append(self.weight, np.full(effect.shape[0], w))

    def update(self, refs: np.ndarray, used: np.ndarray, effect: np.ndarray, w: float) -> None:
        self.usage[:, refs] += w * used
        self.effect[refs] += w * effect
        self.weight[refs] += w


def match(
    eff: SampleEffects, ref_usage: np.ndarray, ref_effect: np.ndarray, min_similarity: float
) -> np.ndarray:
    """The reference each of a sample's dimensions matches, or -1 for none."""
    out = np.full(eff.columns.size, -1, dtype=np.int64)
    if eff.columns.size == 0 or ref_effect.shape[0] == 0:
        return out
    sim = similarity(eff.used, eff.effect, ref_usage, ref_effect)
    rows, cols = linear_sum_assignment(sim, maximize=True)
    good = sim[rows, cols] >= min_similarity
    out[rows[good]] = cols[good]
    return out


def align(
    effects: Sequence[SampleEffects], weights: np.ndarray, min_similarity: float = MIN_SIMILARITY
) -> list[np.ndarray]:
    """For each sample, the aligned label (0, 1, ...) of each of its active dimensions.

    Parameters
    ----------
    effects : sequence of SampleEffects
        Every sample's dimensions (:func:`.effects.sample_effects`).
    weights : ndarray of shape (n_samples,)
        The samples' posterior weights.
    min_similarity : float, default=0.4
        Below this similarity a dimension gets a label of its own.

    Returns
    -------
    list of ndarray of int
        One array per sample, as long as its active dimensions; no label twice in a sample.
    """
    if not effects:
        return []
    n_rows = effects[0].used.shape[0]
    n_cols = effects[0].effect.shape[1]
    refs = _References(n_rows, n_cols)
    for eff, w in zip(effects, weights, strict=True):
        usage, effect = refs.means()
        labels = match(eff, usage, effect, min_similarity)
        seen = labels >= 0
        refs.update(labels[seen], eff.used[:, seen], eff.effect[seen], float(w))
        refs.add(eff.used[:, ~seen], eff.effect[~seen], float(w))
    usage, effect = refs.means()
    out, n_labels = [], refs.size
    for eff in effects:
        labels = match(eff, usage, effect, min_similarity)
        new = labels < 0
        labels[new] = n_labels + np.arange(int(new.sum()))
        n_labels += int(new.sum())
        out.append(labels)
    return out
