"""Provider records: ingested by the data-sync job or imported from CSV, searched and replayed (4.14)."""
