"""The committed price tables, as package data (read by ``loadtest.model.figures.price_tables``)."""
