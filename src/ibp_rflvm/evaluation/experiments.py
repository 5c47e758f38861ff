"""What the harness runs: the methods, the tables and figures, the run settings and the cells.

Everything here is plain data and pure functions of names and integers (no data, no model), so
every other module of the harness can import it. See :mod:`.harness` for the whole picture:
which seeds a cell gets and where a finite model's D comes from.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

SCHEMA_VERSION = 1
HOLDOUT_FRACTION = 0.2
INIT_DIMS = 2  # the paper's protocol: infinite models start at K = 2 (the paper's sampler)


def init_dims_for(cfg: RunConfig) -> int:
    """The IBP models' starting dimensions: the paper's 2, or the library's default start."""
    if cfg.sampler == "paper":
        return INIT_DIMS
    from ..estimator import IBPRFLVM

    return int(IBPRFLVM().init_dims)


class ReproduceError(ValueError):
    """A request the harness cannot carry out (unknown names, settings clash with OUT)."""


# ------------------------------------------------------------------------------------------
# Methods, tables and figures
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One row of a table.

    `family` is ``"rflvm"`` (IBPRFLVM/RFLVM with `likelihood`), ``"gplvm"``, ``"ibp-lfm"``,
    ``"pfa"`` or ``"lda"``; `ibp` says whether the model is infinite; `parent` names the method
    whose final K+ sets this one's D; `z_prior` is the infinite RFLVMs' prior on ``Z``.
    """

    key: str
    name: str
    family: str
    ibp: bool
    likelihood: str | None = None
    parent: str | None = None
    z_prior: str = "ibp"


METHODS: dict[str, Method] = {
    m.key: m
    for m in (
        Method("ibp-rflvm", "IBP-RFLVM", "rflvm", True, "gaussian"),
        Method("rflvm", "RFLVM", "rflvm", False, "gaussian", parent="ibp-rflvm"),
        Method("gplvm", "GPLVM", "gplvm", False, parent="ibp-rflvm"),
        Method("ibp-lfm", "IBP-LFM", "ibp-lfm", True),
        Method("nb-ibp-rflvm", "NB IBP-RFLVM", "rflvm", True, "negbinom"),
        Method("nb-rflvm", "NB RFLVM", "rflvm", False, "negbinom", parent="nb-ibp-rflvm"),
        Method("poisson-ibp-rflvm", "Poisson IBP-RFLVM", "rflvm", True, "poisson"),
        Method("poisson-rflvm", "Poisson RFLVM", "rflvm", False, "poisson", parent="poisson-ibp-rflvm"),
        Method("multinomial-ibp-rflvm", "Multinomial IBP-RFLVM", "rflvm", True, "multinomial"),
        Method(
            "multinomial-rflvm",
            "Multinomial RFLVM",
            "rflvm",
            False,
            "multinomial",
            parent="multinomial-ibp-rflvm",
        ),
        # The paper's future work: the gamma-Poisson feature model as the prior on Z (issue 49).
        Method("gp-rflvm", "Gamma-Poisson RFLVM", "rflvm", True, "gaussian", z_prior="gamma-poisson"),
        Method("nb-gp-rflvm", "NB Gamma-Poisson RFLVM", "rflvm", True, "negbinom", z_prior="gamma-poisson"),
        Method("pfa", "PFA", "pfa", False, parent="poisson-ibp-rflvm"),
        Method("lda", "LDA", "lda", False, parent="multinomial-ibp-rflvm"),
    )
}

_ALIASES = {
    "ibp": "ibp-rflvm",
    "bgplvm": "gplvm",
    "bayesiangplvm": "gplvm",
    "lfm": "ibp-lfm",
    "nb-ibp": "nb-ibp-rflvm",
    "nb": "nb-rflvm",
    "poisson-ibp": "poisson-ibp-rflvm",
    "poisson": "poisson-rflvm",
    "mult-ibp-rflvm": "multinomial-ibp-rflvm",
    "mult-rflvm": "multinomial-rflvm",
    "mult-ibp": "multinomial-ibp-rflvm",
    "mult": "multinomial-rflvm",
}


@dataclass(frozen=True)
class TableDef:
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    kind: str  # "real" or "counts"


TABLES: dict[str, TableDef] = {
    "table1": TableDef(
        ("cancer", "mice", "ovarian", "olivetti", "cambridge"),
        ("ibp-rflvm", "rflvm", "gplvm", "ibp-lfm"),
        "real",
    ),
    "table2": TableDef(
        ("montreal", "congress", "newsgroups", "spam"),
        (
            "nb-ibp-rflvm",
            "nb-rflvm",
            "poisson-ibp-rflvm",
            "poisson-rflvm",
            "multinomial-ibp-rflvm",
            "multinomial-rflvm",
            "pfa",
            "lda",
        ),
        "counts",
    ),
}


@dataclass(frozen=True)
class FigureDef:
    dataset: str
    methods: tuple[str, ...]
    table: str  # the table whose methods these are (for the kind of data)


FIGURES: dict[str, FigureDef] = {
    "fig1": FigureDef("cancer", ("ibp-rflvm", "rflvm", "gplvm", "ibp-lfm"), "table1"),
    "fig2": FigureDef("congress", TABLES["table2"].methods, "table2"),
}


@dataclass(frozen=True)
class LatentBlock:
    """One block of a latent-space table: the data sets (with labels) of `source`, whose methods
    and cells it reads, and the IBP methods whose K+ sets the D of a PCA reference row each."""

    source: str
    datasets: tuple[str, ...]
    pca_from: tuple[str, ...]


#: Table 3: k-nearest-neighbour accuracy of the latent spaces. No cells of its own:
#: it reads the latent matrices of the Table 1 and 2 cells of the labelled data sets.
LATENT_TABLES: dict[str, tuple[LatentBlock, ...]] = {
    "table3": (
        LatentBlock("table1", ("cancer", "mice", "olivetti"), ("ibp-rflvm",)),
        LatentBlock(
            "table2",
            ("congress", "spam", "newsgroups"),
            ("nb-ibp-rflvm", "poisson-ibp-rflvm", "multinomial-ibp-rflvm"),
        ),
    ),
}
#: The data sets some latent-space table scores (their cells keep that score in the record).
LATENT_DATASETS: frozenset[str] = frozenset(
    d for blocks in LATENT_TABLES.values() for b in blocks for d in b.datasets
)

TARGETS = ("table1", "table2", "table3", "fig1", "fig2", "all")


def table_layout(table: str) -> list[tuple[str, tuple[str, ...]]]:
    """``[(dataset, methods), ...]`` of a table: the cells it reads, data set by data set."""
    if table in LATENT_TABLES:
        return [(d, TABLES[b.source].methods) for b in LATENT_TABLES[table] for d in b.datasets]
    return [(d, TABLES[table].methods) for d in TABLES[table].datasets]


def method_key(name: str) -> str:
    """The method key for a key, display name or alias (case, spaces and ``_`` ignored)."""
    norm = "-".join(str(name).strip().lower().replace("_", " ").replace("-", " ").split())
    norm = _ALIASES.get(norm, norm)
    if norm not in METHODS:
        raise ReproduceError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return norm


# ------------------------------------------------------------------------------------------
# Settings, cells and seeds
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """Settings shared by every cell of a run (recorded per cell, see :func:`cell_settings`)."""

    n_iter: int = 100
    n_frequencies: int = 50
    gplvm_iters: int = 1000
    max_rows: int | None = None
    sqrt: bool = False
    seed: int = 0
    data_home: str | None = None
    # The committed cells were made with the paper's sweep and start; "default" is the library's
    # mixing sampler (docs/sampler.md).
    sampler: str = "paper"

    def __post_init__(self) -> None:
        for name in ("n_iter", "n_frequencies"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
                raise ReproduceError(f"{name} must be an integer >= 2; got {value!r}")
        if self.gplvm_iters < 0:
            raise ReproduceError(f"gplvm_iters must be >= 0; got {self.gplvm_iters!r}")
        if self.max_rows is not None and self.max_rows < 10:
            raise ReproduceError(f"max_rows must be at least 10; got {self.max_rows!r}")


@dataclass(frozen=True, order=True)
class Cell:
    dataset: str
    method: str
    trial: int

    @property
    def id(self) -> str:
        return f"{self.dataset}__{self.method}__t{self.trial}"

    def parent(self) -> Cell | None:
        p = METHODS[self.method].parent
        return None if p is None else Cell(self.dataset, p, self.trial)


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def mask_seed(dataset: str, trial: int, base_seed: int = 0) -> int:
    """Seed of the hold-out mask of `dataset` in `trial`; the same for every method."""
    ss = np.random.SeedSequence([int(base_seed), _crc(dataset), int(trial)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def model_seed(dataset: str, method: str, trial: int, base_seed: int = 0) -> int:
    """Seed of one method's chain (or optimiser initialisation) in one cell."""
    ss = np.random.SeedSequence([int(base_seed), _crc(dataset), int(trial), _crc(method)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def cell_settings(cell: Cell, cfg: RunConfig) -> dict[str, Any]:
    """The settings a cell's result depends on; a rerun refuses cells made with others."""
    m = METHODS[cell.method]
    s: dict[str, Any] = {
        "holdout_fraction": HOLDOUT_FRACTION,
        "max_rows": cfg.max_rows,
        "base_seed": cfg.seed,
    }
    if _dataset_kind(cell.dataset) == "counts":
        s["sqrt"] = cfg.sqrt
    if m.family == "gplvm":
        s["gplvm_iters"] = cfg.gplvm_iters
    else:
        s["n_iter"] = cfg.n_iter
    if m.family == "rflvm":
        s["n_frequencies"] = cfg.n_frequencies
    if m.family in ("rflvm", "ibp-lfm") and cfg.sampler != "paper":
        s["sampler"] = cfg.sampler  # absent for the paper's sampler: the committed cells stay valid
    return s


def _dataset_kind(name: str) -> str:
    for t in TABLES.values():
        if name in t.datasets:
            return t.kind
    raise ReproduceError(f"unknown dataset {name!r}")
