"""Leads captured from provider webhooks and imports: cleaning, deduplication, listing."""
