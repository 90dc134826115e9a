"""The committed price tables, as package data (read by ``loadtest.model.price_tables``)."""
