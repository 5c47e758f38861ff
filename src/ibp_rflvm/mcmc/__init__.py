"""Running chains: the driver that runs any kernel with checkpoints (:mod:`.driver`), the
replica-exchange kernel (:mod:`.tempering`), and what a chain keeps (:mod:`.record`)."""
