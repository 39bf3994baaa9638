"""The console (``/console/``): the web app where a team signs in through patchbay's own identity
provider and sees and operates its workspaces (docs/console.md)."""
