"""The dataset service's pure core: aggregate, holdout, limits, errors, sharding strategies."""
