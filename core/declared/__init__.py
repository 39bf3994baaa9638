"""Actions and triggers declared as data: ``providers/<provider>/actions.toml``.

``format`` defines the file, ``loader`` reads and checks it, ``runner`` makes the calls,
``webhooks`` verifies and reads declared webhooks, ``objects`` builds what the hooks register; the
built-in plugin ``plugin`` (entry point ``declared``) registers every file's objects. docs/provider-packs.md
("Declared actions and triggers") shows the format.
"""
