"""Inbound provider webhooks, the event log, and outbound subscriptions with their deliveries."""
