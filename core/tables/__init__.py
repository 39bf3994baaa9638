"""Account-scoped tables: a typed column schema, rows upserted by external key, CSV in and out (4.13)."""
