"""Helpers the built-in provider packs share (``http`` calls, ``crm`` mapping, ``polling`` cursors,
``webhooks`` timestamps, CRM ``destinations``).

Internal to patchbay's own packs: third-party packs use the public facade (``patchbay``) only, so
these may change between releases.
"""
