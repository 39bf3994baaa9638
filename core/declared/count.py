"""``python -m patchbay.core.declared.count``: what the declared files hold, each with its docs URL,
and the totals (providers counting those named by ``also``)."""

from __future__ import annotations

from patchbay.core.declared.loader import declarations


def main() -> None:
    found = declarations()
    for declaration in found:
        print(f"{declaration.provider}" + (f" (also {', '.join(declaration.also)})" if declaration.also else ""))
        for action in declaration.actions:
            print(f"  action  {action.name:<22} {action.docs}")
        for trigger in declaration.triggers:
            print(f"  {trigger.kind:<7} {trigger.name:<22} {trigger.docs}")
    providers = sum(len(declaration.providers) for declaration in found)
    actions = sum(len(declaration.actions) for declaration in found)
    triggers = sum(len(declaration.triggers) for declaration in found)
    print(f"{len(found)} files, {providers} providers, {actions} actions, {triggers} triggers")


if __name__ == "__main__":
    main()
