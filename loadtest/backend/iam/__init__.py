"""The embedded backend's IAM: moto's IAM bookkeeping left out until something uses IAM."""
